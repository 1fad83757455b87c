"""The constitutional seed ships the 10 blocks of seed 002 Step 0 (tests/golden/seed002_constitution.txt), word for
word and in order, with valid tags."""

from __future__ import annotations

import re
from pathlib import Path

from ledger.memory.constitution import CONSTITUTION, CONSTITUTIONAL_TAG
from ledger.memory.decisions import check_tags
from projections.decay import Tier, tier_for

# Seed 002's "Step 0" section, copied into the repository (its header names the source): a clone checks the code
# against it with nothing outside the repository.
GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "seed002_constitution.txt"
DASHES = "# " + "-" * 20
ROW = re.compile(r'^(\d+) self/constitutional (\w+) "(.+)"$')


def seed_section() -> str:
    """The seed's text below the golden file's header (the header's lines start with '# ', then a line of dashes)."""
    lines = GOLDEN.read_text(encoding="utf-8").split("\n")
    end = next(i for i, line in enumerate(lines) if line.startswith(DASHES))
    return "\n".join(lines[end + 1 :])


def seed_blocks() -> list[str]:
    """The quoted text of the seed's table rows 1 to 10, in the seed's order."""
    found = [m for m in (ROW.match(line) for line in seed_section().splitlines()) if m]
    assert [int(m.group(1)) for m in found] == list(range(1, 11)), "the golden file lost rows of the seed's table"
    return [m.group(3) for m in found]


def test_the_golden_file_names_its_source_and_holds_the_seeds_step_0() -> None:
    header = GOLDEN.read_text(encoding="utf-8").split(DASHES)[0]
    assert "seed 002" in header and "002_e3ea2e404df0bc19.txt" in header
    assert seed_section().startswith("Step 0: Define the 10 Constitutional Seed Blocks\n")


def test_the_constitution_has_ten_blocks() -> None:
    assert len(CONSTITUTION) == 10
    assert len({b.content for b in CONSTITUTION}) == 10


def test_every_block_is_the_seeds_text_word_for_word_in_the_seeds_order() -> None:
    assert [b.content for b in CONSTITUTION] == seed_blocks()


def test_every_block_is_constitutional_first_then_its_secondary_tag() -> None:
    for block in CONSTITUTION:
        assert len(block.tags) == 2
        assert block.tags[0] == CONSTITUTIONAL_TAG
        assert block.tags[1].startswith("self/")
    assert CONSTITUTION[0].tags[1] == "self/context"
    assert {b.tags[1] for b in CONSTITUTION[1:]} == {"self/value"}


def test_all_tags_are_valid_memory_tags() -> None:
    for block in CONSTITUTION:
        assert check_tags(list(block.tags)) == list(block.tags)


def test_every_constitutional_block_is_permanent() -> None:
    assert {tier_for(b.tags) for b in CONSTITUTION} == {Tier.PERMANENT}
