"""Schemathesis against ``/openapi.json`` (issue 10, hole 6): no server error and no undocumented status code.

Every operation of the REST API is fuzzed in process with all of schemathesis' checks, in positive and negative
mode, against a real ledger on a SQLite file. The run is bounded and reproducible: a fixed number of examples
per operation and mode, derandomized (Hypothesis derives its seed from the test), no example database.

(``schemathesis.pytest.from_fixture`` does not run under pytest 9, so the operations are driven from one test
through ``APIOperation.as_strategy``; every failure of every operation is collected and reported together.)
"""

from __future__ import annotations

from pathlib import Path

import hypothesis
import hypothesis.errors
import pytest
import schemathesis
from hypothesis import HealthCheck
from schemathesis import GenerationMode
from schemathesis.config import SchemathesisConfig

from api.bootstrap import initialise
from api.rest.app import build_app
from api.settings import Settings

CONFIG = Path(__file__).with_name("schemathesis.toml")
EXAMPLES_PER_MODE = 100
SETTINGS = hypothesis.settings(
    max_examples=EXAMPLES_PER_MODE,
    derandomize=True,
    database=None,
    deadline=None,
    phases=[hypothesis.Phase.explicit, hypothesis.Phase.generate],  # report the first failure; no shrinking
    suppress_health_check=list(HealthCheck),
    print_blob=False,
)


# The operations are fuzzed in shards (every SHARDS-th operation, each shard on a ledger of its own), so that a
# parallel run (pytest-xdist) spreads the few thousand requests over its workers instead of one taking minutes.
SHARDS = 4


@pytest.mark.parametrize("shard", range(SHARDS))
def test_no_server_error_and_no_undocumented_status(tmp_path: Path, shard: int) -> None:
    # Thousands of requests from one caller: the rate limit (tests/e2e/test_rate_limit.py) would answer most of them.
    settings = Settings(home=tmp_path, database_url=f"sqlite:///{tmp_path / 'ledger.db'}", rate_limit=0)
    ledger, _ = initialise(settings)
    config = SchemathesisConfig.from_path(CONFIG)
    schema = schemathesis.openapi.from_asgi("/openapi.json", build_app(ledger, settings), config=config)
    failures: list[str] = []
    operations = 0
    try:
        for index, result in enumerate(schema.get_all_operations()):
            operation = result.ok()
            operations += 1
            if index % SHARDS != shard:
                continue
            for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):

                @SETTINGS
                @hypothesis.given(case=operation.as_strategy(generation_mode=mode))
                def fuzz(case: schemathesis.Case) -> None:
                    case.call_and_validate()

                try:
                    fuzz()
                except hypothesis.errors.Unsatisfiable:
                    continue  # an operation without parameters or body has no negative case
                except (
                    Exception,
                    BaseExceptionGroup,
                ) as exc:  # collect every operation's failure, then report them all
                    failures.append(f"{operation.label} [{mode.value}]: {exc}")
    finally:
        ledger.store.engine.dispose()
    assert operations >= 30, f"only {operations} operations were found in /openapi.json"
    assert not failures, "\n\n".join(failures)
