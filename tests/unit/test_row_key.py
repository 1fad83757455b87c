"""The row authenticators' key: HMAC-SHA256 by precomputed pads equals the standard library's HMAC, the key is
HKDF-SHA256 of the receipt secret (checked against RFC 5869 written out with ``hmac``), and a missing or wrong
authenticator is refused naming its position."""

from __future__ import annotations

import hashlib
import hmac
import secrets

import pytest

from ledger.core.errors import IntegrityViolation
from ledger.core.storage import RowKey
from ledger.core.storage.authenticator import INFO


def rfc5869(secret: bytes, info: bytes, length: int = 32) -> bytes:
    """HKDF-SHA256 with no salt (RFC 5869 §2.2-2.3: a salt of HashLen zeros)."""
    prk = hmac.new(bytes(32), secret, hashlib.sha256).digest()
    okm, block, counter = b"", b"", 1
    while len(okm) < length:
        block = hmac.new(prk, block + info + bytes([counter]), hashlib.sha256).digest()
        okm += block
        counter += 1
    return okm[:length]


def test_rfc5869_as_written_here_gives_the_rfcs_own_test_case_3() -> None:
    # RFC 5869 appendix A.3: SHA-256, IKM 22 × 0x0b, no salt, no info, L = 42.
    okm = rfc5869(bytes([0x0B] * 22), b"", 42)
    assert okm.hex() == ("8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8")


@pytest.mark.parametrize("trial", range(20))
def test_the_mac_is_hmac_sha256_and_the_key_is_hkdf_of_the_receipt_secret(trial: int) -> None:
    secret, digest = secrets.token_bytes(32 + trial), secrets.token_bytes(32)
    key = RowKey.derive(secret)
    expected_key = rfc5869(secret, INFO)
    assert key.mac(digest) == hmac.digest(expected_key, digest, "sha256")
    assert key.macs([digest.hex(), digest[::-1].hex()]) == (
        hmac.digest(expected_key, digest, "sha256") + hmac.digest(expected_key, digest[::-1], "sha256")
    )
    assert INFO == b"compliance-ledger/row-authenticator/v1"


def test_a_missing_or_wrong_authenticator_is_refused_naming_the_position() -> None:
    key, other = RowKey(bytes(32)), RowKey(bytes([1] * 32))
    digest = hashlib.sha256(b"an event").hexdigest()
    key.check(7, digest, key.mac(bytes.fromhex(digest)))
    for mac, why in ((None, "has no authenticator"), (other.mac(bytes.fromhex(digest)), "has a wrong authenticator")):
        with pytest.raises(IntegrityViolation, match=f"the event at position 7 {why}") as caught:
            key.check(7, digest, mac)
        assert caught.value.position == 7
        assert "compliance-ledger verify" in caught.value.hint


def test_strip_checks_every_row_and_returns_them_without_the_authenticator() -> None:
    key = RowKey(bytes(range(32)))
    digests = [hashlib.sha256(bytes([n])).hexdigest() for n in range(3)]
    rows = [(n + 1, "x", d, key.mac(bytes.fromhex(d))) for n, d in enumerate(digests)]
    assert key.strip(rows, 2) == [(n + 1, "x", d) for n, d in enumerate(digests)]
    forged = [*rows[:2], (3, "x", digests[2], rows[0][3])]  # another row's authenticator
    with pytest.raises(IntegrityViolation, match="position 3 has a wrong"):
        key.strip(forged, 2)


def test_the_key_id_is_a_fingerprint_and_the_key_never_shows() -> None:
    one, same, other = RowKey(bytes(32)), RowKey(bytes(32)), RowKey(bytes([9] * 32))
    assert one.key_id == same.key_id != other.key_id and len(one.key_id) == 16
    assert repr(one) == f"RowKey(key_id={one.key_id!r})"
    with pytest.raises(ValueError, match="32 bytes"):
        RowKey(bytes(16))
