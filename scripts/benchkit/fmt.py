"""Number formatting for the reports: rates, durations, ratios, shares and target verdicts."""

from __future__ import annotations

from collections.abc import Sequence


def fmt_rate(per_s: float) -> str:
    """Events (or operations) per second, rounded for reading."""
    if per_s >= 100_000:
        return f"{per_s / 1000:,.0f}k"
    if per_s >= 10_000:
        return f"{per_s / 1000:,.1f}k"
    return f"{per_s:,.0f}"


def spread(values: Sequence[float]) -> str:
    """``min–max`` of a list of rates, for the details sections."""
    return f"{fmt_rate(min(values))}–{fmt_rate(max(values))}"


def fmt_ms(seconds: float) -> str:
    """Seconds as milliseconds: three decimals under 1 ms, two above."""
    ms = seconds * 1000
    return f"{ms:.3f} ms" if ms < 1 else f"{ms:.2f} ms"


def fmt_ms_fine(seconds: float) -> str:
    """Seconds as milliseconds for sub-millisecond work: four decimals under 0.01 ms, three under 1 ms."""
    value = seconds * 1000
    return f"{value:.4f} ms" if value < 0.01 else f"{value:.3f} ms" if value < 1 else f"{value:.2f} ms"


def fmt_millis(ms: float) -> str:
    """Milliseconds (already in ms): two decimals under 100 ms, whole with thousands separators above."""
    return f"{ms:.2f} ms" if ms < 100 else f"{ms:,.0f} ms"


def fmt_secs(seconds: float) -> str:
    """Seconds, as milliseconds under 1 s."""
    if seconds < 1:
        return fmt_millis(seconds * 1000)
    return f"{seconds:.2f} s" if seconds < 10 else f"{seconds:,.0f} s"


def fmt_us(seconds: float) -> str:
    us = seconds * 1e6
    return f"{us:.1f} µs" if us < 10 else f"{us:,.0f} µs"


def fmt_ratio(ratio: float | None) -> str:
    """Three significant digits, so a ratio just under its target never prints as the target itself."""
    if ratio is None:
        return "—"
    return f"{ratio:,.0f}×" if ratio >= 100 else f"{ratio:.3g}×"


def fmt_times(ours: float, base: float) -> str:
    """``ours ÷ base`` with two decimals, or a dash when the base is zero."""
    return f"{ours / base:.2f}×" if base > 0 else "—"


def fmt_share(part: float, whole: float) -> str:
    """``part`` as a whole percentage of ``whole``."""
    return f"{100 * part / whole:.0f}%" if whole > 0 else "—"


def yes_no(ok: bool, *, bold_no: bool = False) -> str:
    """A target's verdict; ``bold_no`` marks a miss in bold."""
    return "yes" if ok else "**no**" if bold_no else "no"
