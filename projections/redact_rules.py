"""The secret detectors of `projections.redact`: detect-secrets' patterns, and the agents'.

detect-secrets (1.5.0) is the maintained library these come from: each `LIBRARY` entry is
one regex of one of its plugins' `denylist` (or of its keyword plugin's quotes-required
set), byte for byte, with the group its `analyze_string` yields. They are written out here
rather than imported because importing the library loads `requests` and its whole scan
machinery (~0.3 s): more than a +1 capture may take in all (docs/secrets.md).
`tests/test_secrets.py` holds every entry equal to the installed library's regex, its
entropy and JWT checks equal to the library's, so an upgrade that changes a pattern fails
there until this table and `redact.VERSION` move together.

`AGENTS`: what the library lacks for the agents' world (Anthropic, OpenAI, Gemini/Google
keys, `.env` lines, `Authorization:` headers, connection strings with a password).

A rule is (kind, hint, pattern, flags, group):
- `hint`: a pattern that matches within every line `pattern` matches in, and never across a
  line end, written so that RE2 and Python's `re` read it alike. `redact` looks for every
  rule's hint in one RE2 pass over the text (C speed, all rules at once); for the rules found,
  it finds the lines their hint matches in (Python's `re`) and runs the rule's own regex
  (Python's `re`: detect-secrets' semantics) on those lines only. An IGNORECASE rule's hint
  is plain words and punctuation, folded by `redact.fold` into the classes Python's
  IGNORECASE matches (`ı`, `İ`, `ſ`, the Kelvin sign: RE2's own `(?i)` differs); `_WS` is
  what Python's `\\s` matches but the line end (RE2's `\\s` is ASCII).
  `tests/test_secrets.py` holds the hinted answer equal to every rule on every line, and
  those classes equal to Python's;
- `group`: the group that is the secret (0: the whole match; -1: every non-empty group, as
  `RegexBasedDetector.analyze_string` yields them).
"""

from __future__ import annotations

import re

Rule = tuple[str, str, str, int, int]

# Python's `\s` in a str pattern but "\n", as a class body (literal characters: the hints
# mean the same to RE2 and to Python's `re`)
_WS = ("\t\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f"
       "\u3000")

_I = re.IGNORECASE

# Not its KeywordDetector: on real transcripts it redacts code and UI strings that merely
# name a password (`"cli.enter_password": "Enter password"`, `password = input(...)`), so
# those words would no longer be found, and it cost ~60 % of the scan. Its high-entropy
# check applies where a value is assigned (`AGENTS`: high-entropy).

LIBRARY: tuple[Rule, ...] = (
    # PrivateKeyDetector (the block around each marker: `redact._key_block`)
    *(("private-key", marker, marker, 0, 0) for marker in (
        "BEGIN DSA PRIVATE KEY", "BEGIN EC PRIVATE KEY", "BEGIN OPENSSH PRIVATE KEY",
        "BEGIN PGP PRIVATE KEY BLOCK", "BEGIN PRIVATE KEY", "BEGIN RSA PRIVATE KEY",
        "BEGIN SSH2 ENCRYPTED PRIVATE KEY", "PuTTY-User-Key-File-2")),
    # AWSKeyDetector
    ("aws-access-key", "A3T|ABIA|ACCA|AKIA|ASIA",
     r"(?:A3T[A-Z0-9]|ABIA|ACCA|AKIA|ASIA)[0-9A-Z]{16}", 0, 0),
    ("aws-secret-key", "aws",
     'aws.{0,20}?(?:key|pwd|pw|password|pass|token).{0,20}?[\\\'\\"]([0-9a-zA-Z/+]{40})[\\\'\\"]',
     _I, -1),
    # GitHubTokenDetector
    ("github-token", "gh[pousr]_", r"(ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9_]{36}", 0, 0),
    # GitLabTokenDetector
    ("gitlab-token", "gl(?:pat|dt|ft|soat|rt)-",
     r"(glpat|gldt|glft|glsoat|glrt)-[A-Za-z0-9_\-]{20,50}(?!\w)", 0, 0),
    ("gitlab-token", "GR1348941", r"GR1348941[A-Za-z0-9_\-]{20,50}(?!\w)", 0, 0),
    ("gitlab-token", "glcbt-", r"glcbt-([0-9a-fA-F]{2}_)?[A-Za-z0-9_\-]{20,50}(?!\w)", 0, 0),
    ("gitlab-token", "glimt-", r"glimt-[A-Za-z0-9_\-]{25}(?!\w)", 0, 0),
    ("gitlab-token", "glptt-", r"glptt-[A-Za-z0-9_\-]{40}(?!\w)", 0, 0),
    ("gitlab-token", "glagent-", r"glagent-[A-Za-z0-9_\-]{50,1024}(?!\w)", 0, 0),
    ("gitlab-token", "gloas-", r"gloas-[A-Za-z0-9_\-]{64}(?!\w)", 0, 0),
    # SlackDetector
    ("slack-token", "xox", r"xox(?:a|b|p|o|s|r)-(?:\d+-)+[a-z0-9]+", _I, 0),
    ("slack-webhook", r"hooks\.slack\.com",
     r"https://hooks\.slack\.com/services/T[a-zA-Z0-9_]+/B[a-zA-Z0-9_]+/[a-zA-Z0-9_]+",
     _I | re.VERBOSE, 0),
    # StripeDetector
    ("stripe-key", "k_live_", r"(?:r|s)k_live_[0-9a-zA-Z]{24}", 0, 0),
    # OpenAIDetector
    ("openai-key", "T3BlbkFJ", r"sk-[A-Za-z0-9-_]*[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20}",
     0, 0),
    # NpmDetector
    ("npm-token", "_authToken=",
     r"\/\/.+\/:_authToken=\s*((npm_.+)|([A-Fa-f0-9-]{36})).*", 0, -1),
    # PypiTokenDetector
    ("pypi-token", "pypi-AgEIcHlwaS5vcmc", r"pypi-AgEIcHlwaS5vcmc[A-Za-z0-9-_]{70,}", 0, 0),
    ("pypi-token", "pypi-AgENdGVzdC5weXBpLm9yZw",
     r"pypi-AgENdGVzdC5weXBpLm9yZw[A-Za-z0-9-_]{70,}", 0, 0),
    # SendGridDetector
    ("sendgrid-key", r"SG\.", r"SG\.[a-zA-Z0-9_-]{22}\.[a-zA-Z0-9_-]{43}", 0, 0),
    # AzureStorageKeyDetector
    ("azure-storage-key", "AccountKey=", r"AccountKey=[a-zA-Z0-9+\/=]{88}", 0, 0),
    # SquareOAuthDetector
    ("square-oauth", "sq0csp-", r"sq0csp-[0-9A-Za-z\\\-_]{43}", 0, 0),
    # JwtTokenDetector (and its `is_formally_valid`: `redact.jwt_valid`)
    ("jwt", "eyJ", r"eyJ[A-Za-z0-9-_=]+\.[A-Za-z0-9-_=]+\.?[A-Za-z0-9-_.+/=]*?", 0, 0),
    # BasicAuthDetector (the password)
    ("basic-auth", "://.*@",
     "://[^:/\\?\\#\\[\\]@!\\$\\&'\\(\\)\\*\\+,;=\\s]+:([^:/\\?\\#\\[\\]@!\\$\\&'\\(\\)\\*\\+,;=\\s]+)@",
     0, 1),
)

# The agents' world. Values that merely name a secret (`$TOKEN`, `${KEY}`, `<your key>`) are
# left alone (`redact._placeholder`).
# the schemes of databases, each as a look back from the "://" a match starts with (a regex
# that starts with a literal is searched for it at C speed; one that starts with an
# alternation of names is tried at every position). `jdbc:postgresql://` ends in one too.
_DB_SCHEMES = "|".join(f"(?<={s}://)" for s in (
    "postgres", "postgresql", "mysql", "mariadb", "mongodb", r"mongodb\+srv", "redis", "rediss",
    "amqp", "amqps", "mssql", "sqlserver", "clickhouse", "cockroachdb", "snowflake", "oracle"))
# an upper-case dotenv name with a secret's word as one of its `_` parts (OPENAI_API_KEY,
# DB_PASSWORD, GITHUB_TOKEN, DATABASE_URL): code's `key = get_key()` or `_onKeyDown` is not
_SECRET_NAME = (r"(?:[A-Z0-9]+_)*(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASS|PWD|CREDENTIALS?|"
                r"AUTH|DSN)(?:_[A-Z0-9]+)*")
AGENTS: tuple[Rule, ...] = (
    ("anthropic-key", "sk-ant-", r"\bsk-ant-[A-Za-z0-9_\-]{20,}", 0, 0),
    ("openai-key", "sk-", r"\bsk-(?!ant-)(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_\-]{20,}",
     0, 0),
    ("google-api-key", "AIza", r"AIza[0-9A-Za-z_\-]{35}", 0, 0),
    ("connection-string", "://.*@", f"://(?:{_DB_SCHEMES})" + r"[^\s:/@]*:([^\s@/]+)@", _I, 1),
    ("authorization", "authorization",
     r"""\b(?:proxy-)?authorization["']?\s*[:=]\s*["']?(?:(?:bearer|basic|token|digest)\s+)?"""
     r"""([^\s"',;]{8,})""", _I, 1),
    # a .env line: NAME=value where NAME names a secret (also `export NAME=…`, and a line
    # number before it as file viewers print one: "  12→NAME=…", "12:NAME=…", "12\tNAME=…")
    ("env-secret", "(?:KEY|TOKEN|SECRET|PASS|PWD|CREDENTIAL|AUTH|DSN)[A-Z0-9_]*[ \t]*=",
     r"(?m)^[ \t]*(?:\d+(?:→|:|\t|│|\|)[ \t]*)?(?:export[ \t]+)?" + _SECRET_NAME
     + r"""[ \t]*=[ \t]*(["']?)([^\s"'#()$<>{}]{6,})\1[ \t]*(?:#[^\n]*)?\r?$""", 0, 2),
    # a high-entropy quoted value assigned to any name (`name = "…"`, `"name": "…"`):
    # detect-secrets' Base64HighEntropyString (limit 4.5) where the value is assigned
    ("high-entropy", f"[:=][{_WS}]*[\"'][A-Za-z0-9+/=_\\-]{{20,}}[\"']",
     r"""[:=]\s*(["'])([A-Za-z0-9+/=_\-]{20,})\1""", 0, 2),
)
