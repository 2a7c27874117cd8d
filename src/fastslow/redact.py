"""One redaction for every secret a config, an override or a command line can carry, and for every
string that leaves a process.

Whatever records or shows a configuration (config.yaml, run.json's overrides and commands, event
headers, ``config show``, the report, the viewer's answers, console lines) passes it through here, so a
password given any way (``-o``, a YAML file, FASTSLOW_PG_DSN) is written and shown as ``***``:

- the password of a URL's user info, whatever the scheme (``postgresql://u:PW@h/db``,
  ``https://u:PW@h/v1``) -> ``u:***@``; a user name alone is kept;
- a URL query parameter whose name names a secret (``?password=PW``, ``&sslpassword=PW``,
  ``&token=PW``) -> ``password=***``;
- a ``key=value`` or ``key: value`` pair whose key names a secret (libpq's ``password=PW`` or
  ``password='se cret'``, ``amm.password=PW``, ``"api_key": "PW"``) -> ``key=***``;
- in structured data (a config dump, a JSON answer), the value of a key that names a secret.

A key names a secret when it ends in password, passwd, secret, token, api_key, access_key,
secret_key, private_key or credential(s), in any case, with ``_`` or ``-`` or nothing between the
words; ``password_env`` and ``api_key_env`` name an environment variable, not its value, and
``max_tokens`` is a count, so they are kept. Only the harness's own worker processes get the secrets
(a dump with the context ``{"secrets": True}``, see ``wants_secrets``).

Every string that leaves a process passes through here too, whatever produced it: each event line
the event writer appends (``redact_json``: a model error quoting ``http://u:PW@host/v1``, a Sage error
in ``env_step.reason``), the viewer's answers and the report's embedded data (``redact_data``), and
every log record and uncaught exception's traceback of a process that imported this module
(``install``, run on import: every fastslow process, worker processes included, imports it with its
configuration).
"""

from __future__ import annotations

import json
import logging
import re
import sys
import threading
import traceback
from types import TracebackType
from typing import Any

MASK = "***"
"""What a secret is replaced by."""

SECRETS_CONTEXT_KEY = "secrets"
"""Serialization context key: ``model_dump(context={"secrets": True})`` keeps the secrets (the config
shipped to the harness's own workers); every other dump redacts them."""

_SECRET_NAME = r"(?:pass(?:word|wd)|secret|token|(?:api|access|secret|private)[_-]?key|credentials?)"
_SECRET_KEY = re.compile(rf"[\w.-]*{_SECRET_NAME}", re.IGNORECASE)

# A URL: scheme, then everything up to whitespace, a quote or an angle bracket.
_URL = r"(?P<url>\b[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>]*)"
# key=value (libpq, command lines) or key: value (YAML, JSON) whose key names a secret; the value is
# a quoted string (backslash escapes) or a run of characters up to whitespace.
_PAIR = (
    rf"(?P<key>(?<![\w.-])[\"']?[\w.-]*{_SECRET_NAME}[\"']?\s*(?P<sep>[=:])\s*)"
    r"(?P<value>'(?:[^'\\]|\\.)*'?|\"(?:[^\"\\]|\\.)*\"?|[^\s'\"]\S*)"
)
_TEXT = re.compile(f"{_URL}|{_PAIR}", re.IGNORECASE)
_QUERY_PAIR = re.compile(rf"(?P<key>[?&;][\w.-]*{_SECRET_NAME}=)[^&#]*", re.IGNORECASE)
_FLOW_END = re.compile(r"[,}\]]")
# What every text redact_text or redact_data would change holds somewhere, also JSON-encoded: a URL's
# "://", or a secret's name not followed by a word character (but by a quote, a blank, "=" or ":", or
# the backslash that escapes one). "prompt_tokens" and "password_env" hold none. The regexes above
# cost up to a microsecond per character; an ASCII text (nearly every one) is checked by plain
# substring search instead, for the ends of the names ("api_key" ends in "key"), a few nanoseconds a
# character. A text with other characters takes the regex: case-insensitive matching folds some of
# them onto ASCII letters (the Kelvin sign onto "k").
_MAY_HOLD = re.compile(rf"://|{_SECRET_NAME}(?!\w)", re.IGNORECASE)
_NAME_ENDS = ("password", "passwd", "secret", "token", "key", "credential", "credentials")


def is_secret_key(key: str) -> bool:
    """Whether a (dotted) key names a secret: its last part ends in password, token, api_key, ...
    (``*_env`` names an environment variable and is no secret itself)."""
    last = str(key).rsplit(".", 1)[-1]
    return may_hold_secret(last) and _SECRET_KEY.fullmatch(last) is not None


def redact_text(text: str) -> str:
    """``text`` with every password of a URL, secret query parameter and secret ``key=value`` /
    ``key: value`` pair replaced by ``***``; anything else unchanged."""
    if not text or not may_hold_secret(text):
        return text
    return _TEXT.sub(_replace, text)


def may_hold_secret(text: str) -> bool:
    """Whether ``text`` might hold something ``redact_text`` or ``redact_data`` would mask (False: it
    certainly holds nothing); also right for JSON text, whose escapes never hide a match. A fast
    pre-check for texts written often (an event line), most of which hold no secret."""
    if not text.isascii():
        return _MAY_HOLD.search(text) is not None
    if "://" in text:
        return True
    lowered = text.lower()
    for name in _NAME_ENDS:
        at = lowered.find(name)
        while at >= 0:
            after = at + len(name)
            if after == len(lowered) or not (lowered[after].isalnum() or lowered[after] == "_"):
                return True  # not followed by a word character (\w: alphanumeric or "_")
            at = lowered.find(name, after)
    return False


def redact_json(text: str) -> str:
    """One JSON document (an event line) with its secrets masked as ``redact_data`` masks them, written
    compactly; ``text`` itself when it holds none. Masking the parsed data, not the text, keeps the
    line valid JSON whatever a secret's value holds (quotes, commas, escapes)."""
    if not may_hold_secret(text):
        return text
    data = json.loads(text)
    masked = redact_data(data)
    if masked == data:
        return text
    return json.dumps(masked, ensure_ascii=False, separators=(",", ":"))


def _replace(match: re.Match[str]) -> str:
    url = match.group("url")
    if url is not None:
        return _redact_url(url)
    key, value = match.group("key"), match.group("value")
    if match.group("sep") == "=":
        return key + MASK  # libpq and command-line form: the value, quoted or not, goes whole
    quote = value[:1]
    if quote in ("'", '"'):
        return f"{key}{quote}{MASK}{quote}"  # quoted stays quoted: JSON or YAML text stays valid
    # YAML/JSON: an unquoted value ends at a comma or closing bracket of a flow mapping.
    end = _FLOW_END.search(value)
    return key + MASK + (value[end.start() :] if end else "")


def _redact_url(url: str) -> str:
    scheme, rest = url.split("://", 1)
    # The authority ends at the first / ? or #; its user info ends at its last @ (a raw @ in a password
    # is a user's mistake, but must not leak the part after it either).
    end = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
    authority, tail = rest[:end], rest[end:]
    if "@" in authority:
        userinfo, host = authority.rsplit("@", 1)
        if ":" in userinfo:
            userinfo = userinfo.split(":", 1)[0] + ":" + MASK
        authority = f"{userinfo}@{host}"
    tail = _QUERY_PAIR.sub(lambda m: m.group("key") + MASK, tail)
    return f"{scheme}://{authority}{tail}"


def redact_override(override: str) -> str:
    """A ``-o KEY=VALUE`` override as it may be recorded: ``KEY=***`` when the key names a secret,
    otherwise the value with its secrets redacted (``amm.dsn=postgresql://u:***@h/db``)."""
    key, sep, value = override.partition("=")
    if sep and is_secret_key(key.strip()) and value:
        return f"{key}={MASK}"
    return redact_text(override)


def redact_argv(argv: list[str]) -> list[str]:
    """A command line as it may be recorded: each ``-o``/``--override`` value through
    ``redact_override``, the value of an option whose name names a secret (``--password X``,
    ``--api-key=X``) masked, every other argument through ``redact_text``."""
    out: list[str] = []
    pending = ""  # what the previous argument says this one is: an override, a secret, or nothing
    for arg in argv:
        if pending == "secret":
            out.append(MASK)
        elif pending == "override":
            out.append(redact_override(arg))
        elif arg.startswith("--override="):
            out.append("--override=" + redact_override(arg[len("--override=") :]))
        elif arg.startswith("-o") and not arg.startswith("--") and len(arg) > 2:
            out.append("-o" + redact_override(arg[2:]))  # -oKEY=VALUE, click's attached form
        elif arg.startswith("--") and is_secret_key(arg[2:].split("=", 1)[0]):
            out.append(arg.split("=", 1)[0] + "=" + MASK if "=" in arg else arg)
        else:
            out.append(redact_text(arg))
        if pending:
            pending = ""
        elif arg in ("-o", "--override"):
            pending = "override"
        elif arg.startswith("--") and "=" not in arg and is_secret_key(arg[2:]):
            pending = "secret"
    return out


def redact_data(value: Any) -> Any:
    """A copy of JSON-like data (a config dump, a viewer answer) with the value of every key that
    names a secret masked (empty values and None kept: they hide nothing) and every string passed
    through ``redact_text``."""
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        return {k: (MASK if _hides(k, v) else redact_data(v)) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_data(v) for v in value]
    return value


def _hides(key: Any, value: Any) -> bool:
    if value is None or value == "" or value == {} or value == [] or isinstance(value, bool):
        return False
    return isinstance(key, str) and is_secret_key(key)


def wants_secrets(context: Any) -> bool:
    """Whether a serialization context asks for the secrets (``{"secrets": True}``)."""
    return isinstance(context, dict) and context.get(SECRETS_CONTEXT_KEY) is True


def _redacting_record_factory(factory: Any) -> Any:
    # A record factory, not a logging.Filter: a filter sees only its own logger's records (not those of
    # its children, nor httpx's), and no handler is configured to hang one on (the last-resort handler
    # prints warnings); the factory sees every record of the process whoever logs it or prints it.
    def make_record(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record: logging.LogRecord = factory(*args, **kwargs)
        try:
            message = record.getMessage()
        except Exception:  # a bad format string: logging reports it when the record is emitted
            return record
        masked = redact_text(message)
        if masked != message:  # a record without secrets keeps its msg and args for any handler
            record.msg, record.args = masked, ()
        if record.exc_info and record.exc_info[0] is not None:
            text = "".join(traceback.format_exception(*record.exc_info))
            if may_hold_secret(text):
                record.exc_text = redact_text(text.rstrip("\n"))  # what Formatter prints instead
        return record

    make_record.redacts = True  # type: ignore[attr-defined]
    return make_record


def _redacted_traceback(exc_type: type[BaseException], exc: BaseException, tb: TracebackType | None) -> str:
    return redact_text("".join(traceback.format_exception(exc_type, exc, tb)))


def excepthook(exc_type: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None:
    """``sys.excepthook``: Python's own traceback, its secrets masked (``redact_text``)."""
    sys.stderr.write(_redacted_traceback(exc_type, exc, tb))


def _thread_excepthook(args: threading.ExceptHookArgs) -> None:
    # Python's own threading.excepthook, its secrets masked.
    if args.exc_type is SystemExit or args.exc_value is None:
        return
    name = args.thread.name if args.thread is not None else threading.get_ident()
    text = _redacted_traceback(args.exc_type, args.exc_value, args.exc_traceback)
    sys.stderr.write(f"Exception in thread {name}:\n{text}")


def install() -> None:
    """Redact every log record's message (and its exception's traceback) and every uncaught
    exception's traceback, in threads too, of this process. Idempotent; the record factory wraps the
    one in place. Run on import of this module."""
    factory = logging.getLogRecordFactory()
    if not getattr(factory, "redacts", False):
        logging.setLogRecordFactory(_redacting_record_factory(factory))
    # Only Python's own hooks are replaced: one a debugger or a test runner put in place stays.
    if sys.excepthook is sys.__excepthook__:
        sys.excepthook = excepthook
    if threading.excepthook is threading.__excepthook__:
        threading.excepthook = _thread_excepthook


# Every fastslow process imports this module with its configuration (fastslow.config), worker
# processes spawned for an eval included, so installing here reaches them without each entry point
# remembering to.
install()
