"""Redaction rules, table-driven: what must be replaced and what must survive."""

import os
import subprocess
import sys

import pytest

from conftest import isolated
from om.redact import MARKER, redact

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
R = MARKER

GHP = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEowIBAAKCAQEA1c2L0mbVt3H2yJ4aY\nq8s1Zy2YgQ==\n"
    "-----END RSA PRIVATE KEY-----"
)
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"
    ".eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ"
    ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)

# (input, expected output)
HITS = [
    # 1. legacy PEM blocks, any key type, across lines, surrounding text kept
    (f"key:\n{PEM}\ndone", f"key:\n{R}\ndone"),
    ("-----BEGIN PRIVATE KEY-----\nabc\n-----END PRIVATE KEY-----", R),
    ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn\n-----END OPENSSH PRIVATE KEY-----", R),
    ("-----BEGIN ENCRYPTED PRIVATE KEY-----\nx\n-----END ENCRYPTED PRIVATE KEY-----", R),
    # any label, in any case, up to the first dash; the nearest end line closes the block
    ("-----BEGIN rsa PRIVATE KEY-----\nline\n-----END rsa PRIVATE KEY-----", R),
    ("-----BEGIN my\nkey PRIVATE KEY-----x-----END PRIVATE KEY----- tail", f"{R} tail"),
    ("-----BEGIN A PRIVATE KEY-----1-----END B PRIVATE KEY-----2-----END C PRIVATE KEY-----", f"{R}2-----END C PRIVATE KEY-----"),
    # 2. legacy sk- and gh[pousr]_ tokens
    ("OPENAI key sk-abcdefghijklmnop1234 used", f"OPENAI key {R} used"),
    ("sk-proj-AbC_dEf-1234567890xyz", R),
    ("sk-ant-api03-abcdefghijklmnopqrstuvwxyz", R),
    (f"token {GHP}.", f"token {R}."),
    ("gho_abcdefghij0123456789 ghu_abcdefghij0123456789", f"{R} {R}"),
    ("ghs_abcdefghij0123456789ABCD ghr_abcdefghij0123456789", f"{R} {R}"),
    # the trailing boundary backtracks into a run that ends in dashes
    ("sk-abcdefghijklmnop-", f"{R}-"),
    ("see sk-abcdefghijklmnop_- now", f"see {R}- now"),
    ("sk-abcdefghijklmnopqr---x", R),
    # 3. legacy Bearer, case-insensitive, word included
    ("curl -H 'Authorization: Bearer abc.def-ghi_jkl'", f"curl -H 'Authorization: {R}'"),
    ("bearer eyJabc/def+ghi==", R),
    ("BEARER\tabc", R),
    # only "=" padding ends the token; what follows it stays
    ("Bearer abc=def", f"{R}def"),
    ("Bearer abc==", R),
    ("(Bearer abc)", f"({R})"),
    # 4. vendor tokens
    ("github_pat_11ABCDEFG0abcdefghijkl_mnopqrstuvwxyzABCDEFGHIJ0123456789abcdefgh", R),
    ("aws AKIAIOSFODNN7EXAMPLE id", f"aws {R} id"),
    ("ASIAY34FZKBOKMUTVV7A", R),
    ("SLACK xoxb-1234567890-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx", f"SLACK {R}"),
    ("xoxp-12345-67890-abcdef", R),
    ("xoxa-2-abcdefghijklmnop xoxs-abcdefghijk xoxr-abcdefghijk xoxo-abcdefghijk",
     f"{R} {R} {R} {R}"),
    ("stripe sk_live_4eC39HqLyjWDarjtT1zdp7dc", f"stripe {R}"),
    ("rk_test_4eC39HqLyjWDarjtT1zdp7dc", R),
    ("AIzaSyA1234567890abcdefghijklmnopqrstuv", R),
    ("//registry.npmjs.org/:_authToken=npm_abcdefghijklmnopqrstuvwxyz0123456789",
     f"//registry.npmjs.org/:_authToken={R}"),
    ("pypi-AgEIcHlwaS5vcmcCJGFiY2RlZmdoaWprbG1ub3BxcnN0dXZ3eHl6", R),
    ("VAULT hvs.CAESIJ1234567890abcdefghijklmnop", f"VAULT {R}"),
    (f"cookie {JWT} end", f"cookie {R} end"),
    # 5. credentials in URLs: scheme and user kept, password redacted
    ("postgres://bob:s3cret@db:5432/app", f"postgres://bob:{R}@db:5432/app"),
    ("https://user:pass@example.com/x?y=1", f"https://user:{R}@example.com/x?y=1"),
    ("git clone https://x-access-token:abc123@github.com/o/r.git",
     f"git clone https://x-access-token:{R}@github.com/o/r.git"),
    ("redis://:hunter2@cache:6379", f"redis://:{R}@cache:6379"),
    ("mongodb+srv://admin:p@ss:w0rd@cluster0.mongodb.net", f"mongodb+srv://admin:{R}@cluster0.mongodb.net"),
    ("amqp://guest:guest@localhost", f"amqp://guest:{R}@localhost"),
    (f"https://bot:{GHP}@github.com", f"https://bot:{R}@github.com"),
    # 6. Authorization header values, any scheme
    ("Authorization: Basic dXNlcjpwYXNzd29yZA==", f"Authorization: Basic {R}"),
    ("authorization: token abc", f"authorization: token {R}"),
    ("Authorization: Digest abcdef", f"Authorization: Digest {R}"),
    ("Proxy-Authorization: Basic Zm9vOmJhcg==", f"Proxy-Authorization: Basic {R}"),
    ("Authorization: a1b2c3d4e5f6g7h8", f"Authorization: {R}"),
    ("Authorization: Custom a1b2c3d4e5f6g7h8", f"Authorization: Custom {R}"),
    ("Authorization: a1b2c3d4e5f6 trailing", f"Authorization: {R} trailing"),
    ('{"Authorization": "Basic dXNlcjpwYXNz"}', f'{{"Authorization": "Basic {R}"}}'),
    ("headers={'authorization': 'token 0123abcd'}", f"headers={{'authorization': 'token {R}'}}"),
    # 7. NAME=value assignments with secret-like names and secret-like values
    ("export DB_PASSWORD=hunter2hunter2", f"export DB_PASSWORD={R}"),
    ("PGPASSWORD=s3cr3tpw psql", f"PGPASSWORD={R} psql"),
    ("API_KEY=a1b2c3d4e5f6", f"API_KEY={R}"),
    ("apikey = 'Zx9!Qw8@Er7#'", f"apikey = '{R}'"),
    ("x-api-key: 0123456789abcdef", f"x-api-key: {R}"),
    ('{"client_secret": "9f8e7d6c5b4a3210", "client_id": "app"}',
     f'{{"client_secret": "{R}", "client_id": "app"}}'),
    ('{\\"access_token\\": \\"ya29.a0AfH6SMBx1234\\"}', f'{{\\"access_token\\": \\"{R}\\"}}'),
    ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYzz1234KEY0",
     f"aws_secret_access_key = {R}"),
    ("private_key: MIIEvQIBADANBgkq", f"private_key: {R}"),
    ("auth_token=tok_12345678", f"auth_token={R}"),
    ("authToken: 'abc123def456'", f"authToken: '{R}'"),
    ("SECRET_KEY_BASE=0a1b2c3d4e5f", f"SECRET_KEY_BASE={R}"),
    ("passwd => 'c0rrect-h0rse'", f"passwd => '{R}'"),
    ("token := \"T0k3nValue!\"", f"token := \"{R}\""),
    ("DB_PASS=p4ssw0rd!", f"DB_PASS={R}"),
    ("password: 12345678", f"password: {R}"),
    ("https://api.example.com/v1?user=bob&token=abc123def456&page=2",
     f"https://api.example.com/v1?user=bob&token={R}&page=2"),
    ("$token = 'a1b2c3d4e5f6'", f"$token = '{R}'"),
    ("self.api_key = 'sk_abc_1234567'", f"self.api_key = '{R}'"),
    ("credentials: AbCdEf0123456789", f"credentials: {R}"),
    ("session_key=QmFzZTY0U2Vzc2lvbktleQ", f"session_key={R}"),
    ("passphrase: correcthorsebatterystaplecorrecthorse", f"passphrase: {R}"),
    # several rules in one text
    (f"A={GHP}\nB=AKIAIOSFODNN7EXAMPLE\npassword=hunter2hunter2",
     f"A={R}\nB={R}\npassword={R}"),
]

SURVIVORS = [
    "",
    "plain text with no secrets",
    "the word private",
    "store the private key in a hardware module",
    "private key: stored in the vault",
    "-----BEGIN PUBLIC KEY-----\nMFkwEw\n-----END PUBLIC KEY-----",
    "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----",
    "-----BEGIN RSA PRIVATE KEY----- without an end",
    "-----BEGIN RSA-2048 PRIVATE KEY-----\nx\n-----END RSA-2048 PRIVATE KEY-----",
    "-----BEGIN RSA private key-----\nx\n-----END RSA private key-----",
    "xBearer abc123",
    "Bearer =abc",
    "sk-abcdefghijklmno-",
    "sk-----------------",
    "ghp_abcdefghij0123456789_",
    "token counts went up",
    "max_tokens=4096",
    "max_tokens: 409600000",
    "tokens: 1234",
    "input_tokens=1234567890 output_tokens=987654321",
    '"token_count": 123456789',
    "tokenizer: cl100k_base",
    "${GITHUB_TOKEN}",
    "$API_KEY",
    "password=${DB_PASS}",
    "password=$DB_PASS",
    "PASSWORD=%DB_PASS%",
    'token: "${{ secrets.GITHUB_TOKEN }}"',
    "api_key: {{ vault_api_key }}",
    '"token": "<your-token>"',
    "API_KEY=<insert-key-here>",
    'api_key = os.environ["OPENAI_API_KEY"]',
    "token = os.getenv('TOKEN')",
    "const apiKey = process.env.API_KEY;",
    "self.token = config.token",
    "token = getAccessTokenValue",
    "token: someCamelCaseIdentifierName",
    "api_key = settings.OPENAI_API_KEY",
    "password = get_password()",
    "password: required",
    'token: "string"',
    'password: "example"',
    "secret: null",
    "api_key: None",
    "use_token: true",
    "password: ********",
    "token=***",
    f"token={MARKER}",
    f'"password": "{MARKER}"',
    "password: hunter2",
    "token=abc",
    'password: ""',
    "api_key: your-api-key-here",
    "SECRET_KEY=changeme-in-production",
    "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "password = 'my pass phrase'",
    "secret_name: prod-db-secret",
    "SECRET_NAME=prod-db-secret-2024",
    "token_type: bearer_token",
    "password_policy: min8chars",
    "AWS_ACCESS_KEY_ID=EXAMPLEKEYID1234",
    "private_key_path: ~/.ssh/id_ed25519",
    "TOKEN_FILE=/run/secrets/token",
    "token_url: https://auth.example.com/oauth/token",
    "credentials: include",
    "bypass: 12345678",
    "passed: 12345678",
    "monkey_key: a1b2c3d4e5f6",
    '"key": "a1b2c3d4e5f6"',
    "if token == 'x': pass",
    "if token != other_token:",
    "sk-learn",
    "pip install scikit-learn sk-learn",
    "task-123 and mask-abcdefghijklmnopqrstuvwxyz",
    "ghp_short",
    "high_gh_abcdefghijklmnopqrstuvwxyz",
    "commit 3f2a9c1e5b7d8f0a1c2e3b4d5f6a7b8c9d0e1f2a",
    "request 123e4567-e89b-12d3-a456-426614174000 completed",
    "see https://example.com/docs?page=2#section",
    "https://user@host.example.com/repo.git",
    "ssh://git@github.com:22/org/repo.git",
    "git@github.com:org/repo.git",
    "http://localhost:8080/path@v2",
    "email bob@example.com about http://example.com: ok",
    "Authorization header is missing",
    "Authorization: required for admin endpoints",
    "authorization: ${AUTH_HEADER}",
    "Authorization: <token>",
    "authorization_code=abc123def456",
    "AKIA is the prefix of an access key id",
    "AKIAIOSFODNN7EXAMPLEX",
    "xoxb-short",
    "eyJhbGciOiJIUzI1NiJ9 alone",
    "npm_config_cache=/tmp/npm",
    "timestamp: 2024-01-01T00:00:00Z key: value",
    "a: b = c : d",
    "\ud800 lone surrogate \x00 NUL \u2028 line separator",
]


@pytest.mark.parametrize("text,expected", HITS)
def test_recognised_secrets_are_replaced_by_the_marker(text, expected):
    assert redact(text) == expected


@pytest.mark.parametrize("text", SURVIVORS)
def test_ordinary_text_references_and_placeholders_survive_unchanged(text):
    assert redact(text) == text


@pytest.mark.parametrize("text,expected", HITS)
def test_redacting_redacted_text_changes_nothing(text, expected):
    assert redact(expected) == expected


def test_legacy_rules_run_in_their_historical_order():
    # sk- runs before Bearer, so the Bearer rule sees the marker and leaves the
    # word in place; in the other order the whole phrase would be one marker.
    assert redact("Bearer sk-abcdefghijklmnop1234") == f"Bearer {R}"


def test_legacy_bearer_rule_also_hits_prose_for_id_compatibility():
    assert redact("the bearer of bad news") == f"the {R} bad news"


def test_legacy_word_boundaries_are_ascii_only():
    # "é" is not an ASCII word character, so a boundary exists before "sk-".
    assert redact("ésk-abcdefghijklmnop1234") == f"é{R}"
    assert redact("ask-abcdefghijklmnop1234") == "ask-abcdefghijklmnop1234"


def test_legacy_whitespace_is_re2_whitespace_not_vertical_tab():
    assert redact("Bearer\x0babcdef") == "Bearer\x0babcdef"


def test_bearer_tokens_take_the_two_letters_gos_case_folding_adds_to_their_class():
    # v1's (?i) folds [A-Za-z] too: the long s (U+017F) and the Kelvin sign (U+212A) are token characters.
    assert redact("Bearer \u017fecret") == R
    assert redact("Bearer \u212aey x") == f"{R} x"
    assert redact("Bearer \u0131x") == "Bearer \u0131x"  # dotless i folds with nothing in ASCII


def test_ascii_case_folding_only_for_case_insensitive_rules():
    # KELVIN SIGN lowercases to "k" but is not an ASCII letter.
    text = "API_\u212aEY=a1b2c3d4e5f6"
    assert redact(text) == text


def test_text_without_any_trigger_is_returned_as_the_same_object():
    text = "ls -la\ntotal 0\n" * 100
    assert redact(text) is text


def test_redacting_clean_text_does_not_import_the_regex_module():
    code = (
        "import om.redact as r, sys; "
        "r.redact('plain text with no secrets'); "
        "r.redact('x' * 100000); "
        "print('re' in sys.modules)"
    )
    # -I would ignore PYTHONPATH; -S still keeps site's own imports out.
    env = dict(os.environ, PYTHONPATH=ROOT)
    out = subprocess.run(
        [sys.executable, "-S", "-c", code], capture_output=True, text=True, env=env,
        check=True, cwd="/",
    )
    assert out.stdout.strip() == "False"


def test_importing_and_redacting_clean_text_in_isolated_mode_does_not_import_re():
    code = (
        f"import sys; sys.path.insert(0, {ROOT!r}); "
        "import om.redact as r; "
        "r.redact('plain text with no secrets'); "
        "print('re' in sys.modules)"
    )
    out = subprocess.run(
        [*isolated(), "-S", "-c", code], capture_output=True, text=True, check=True,
    )
    assert out.stdout.strip() == "False"


def test_redacting_text_only_v1s_rules_match_does_not_import_the_regex_module():
    texts = ["Bearer abc=def", "sk-abcdefghijklmnop-", "ghp_abcdefghij0123456789ABCD",
             "-----BEGIN rsa PRIVATE KEY-----\nx\n-----END rsa PRIVATE KEY-----"]
    code = (
        f"import sys; sys.path.insert(0, {ROOT!r}); "
        "import om.redact as r; "
        f"print(all(r.MARKER in r.redact(t) for t in {texts!r}), 're' in sys.modules)"
    )
    out = subprocess.run(
        [*isolated(), "-S", "-c", code], capture_output=True, text=True, check=True,
    )
    assert out.stdout.strip() == "True False"


def test_redacting_dirty_text_does_import_the_regex_module():
    code = (
        f"import sys; sys.path.insert(0, {ROOT!r}); "
        "import om.redact as r; "
        "print(r.redact('password=hunter2hunter2'), 're' in sys.modules)"
    )
    out = subprocess.run(
        [*isolated(), "-S", "-c", code], capture_output=True, text=True, check=True,
    )
    assert out.stdout.strip() == f"password={R} True"
