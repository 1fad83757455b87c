"""Credentials for the tests of the scan at the door (each a fake of the right shape, assembled from parts so this
repository holds no literal credential), texts that only talk about keys, and the two places a leak would show:
the bytes of every file under a ledger's home, and a ``pg_dump`` of its PostgreSQL schema."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, urlsplit, urlunsplit


@dataclass(frozen=True)
class Sample:
    """A text holding one credential: its ``kind`` as the scan names it, and a ``needle`` of the credential that
    would be in the database's bytes if it had been stored."""

    kind: str
    text: str
    needle: str


_AWS = "AKIA" + "Q3EGRT5YJH7LKD2M"
_GITHUB = "ghp_" + "R8fT2kLm9QxW4vB7nZc1Yp6Hd3Js5Ga0UeKi"
_SLACK = "xoxb-" + "263714598201-" + "2871364059128-" + "Xq7LmPz2Rk9WvB4sNc8TyHd1"
_KEY_BODY = "MIIEpAIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gunVTLw"
_PRIVATE_KEY = "\n".join(
    [
        "-----BEGIN " + "RSA PRIVATE KEY-----",
        _KEY_BODY,
        "7nB2fAkQ9xLmZ4pW8sR1tY6vC3uH0jK5oE7iG2dN",
        "-----END RSA PRIVATE KEY-----",
    ]
)
_JWT_SIGNATURE = "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
_JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9."
    + "eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ."
    + _JWT_SIGNATURE
)
_URL_PASSWORD = "Zq8vR2pLw9xNk4Tb"
_ENTROPY = "9fK2mQ7xLp4ZrT8vWb3NcY6hJd1GsE5a"

SAMPLES: tuple[Sample, ...] = (
    Sample("aws_access_key", f"The staging uploads run as {_AWS} with the deploy policy attached.", _AWS),
    Sample("github_token", f"CI clones the private repo with {_GITHUB} since Monday.", _GITHUB),
    Sample("slack_token", f"The alert bot posts with {_SLACK} into the ops channel.", _SLACK),
    Sample("private_key", f"The bastion key, for the record:\n{_PRIVATE_KEY}\nrotate it yearly.", _KEY_BODY),
    Sample("json_web_token", f"A session captured in the logs: Bearer {_JWT} (expired).", _JWT_SIGNATURE),
    Sample(
        "basic_auth_credentials",
        f"Clone it from https://deploy:{_URL_PASSWORD}@git.example.com/app.git on the build box.",
        _URL_PASSWORD,
    ),
    Sample("base64_high_entropy_string", f"The payment sandbox wants api_key={_ENTROPY} in its header.", _ENTROPY),
)

BENIGN: tuple[str, ...] = (
    "Never paste the key into memory: read AWS_SECRET_ACCESS_KEY and GITHUB_TOKEN from the environment.",
    "The secret: keep it in the vault, not here. The password is rotated by the platform team.",
    "Commit 3f2a1b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a fixed the flaky retry in the uploader.",
    'The sha256 of release.tar.gz is "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08".',
    "Request 123e4567-e89b-12d3-a456-426614174000 failed; block blk_0123456789abcdef01234567 explains why.",
    "Session ses_0123456789abcdef0123 searched for 'api_key rotation policy' before the change.",
    "Set api_key = os.environ['PAYMENTS_API_KEY'] in settings.py; the token column is named api_token.",
    "The dashboard is at https://ops.example.com/dashboard?page=2 and alice@example.com owns it.",
    'The compose file sets password = "${DB_PASSWORD}" and the example reads api_key: <your key here>.',
)


def leaked_into_files(home: Path, needle: str) -> list[str]:
    """The files under ``home`` (database, WAL, snapshots, keys, anything) whose bytes hold ``needle`` (as sent,
    or lower-cased as a full-text index keeps words)."""
    found = []
    for path in sorted(p for p in home.rglob("*") if p.is_file()):
        data = path.read_bytes()
        if needle.encode() in data or needle.lower().encode() in data:
            found.append(str(path))
    return found


def pg_dump(url: str) -> bytes:
    """A plain ``pg_dump`` of the test's schema only (the one its URL's ``search_path`` names), data included."""
    parts = urlsplit(url)
    options = parse_qs(parts.query).get("options", [""])[0]
    schema = options.removeprefix("-csearch_path=")
    assert schema.startswith("t_"), url
    server = urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))
    done = subprocess.run(
        ["pg_dump", "--schema", schema, "--no-owner", server], capture_output=True, check=True, timeout=120
    )
    return done.stdout


def leaked_into_dump(url: str, needle: str) -> bool:
    """Whether the schema's dump holds ``needle`` (as sent or lower-cased)."""
    dump = pg_dump(url)
    return needle.encode() in dump or needle.lower().encode() in dump
