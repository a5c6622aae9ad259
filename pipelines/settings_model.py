"""Validation of the `gpufleet.toml` sections: each setting is declared once, pydantic checks it.

A section is a frozen pydantic dataclass whose config is `SECTION`: unknown keys are refused and
types are strict, so a string is never read as a list of its characters and `"5"` never as 5.
`build_section` turns pydantic's errors into one line each, naming where the value came from
(file or environment variable), the key, the expected type and the value.
"""

from __future__ import annotations

import difflib
import json
import math
import re
from collections.abc import Mapping
from datetime import date, datetime, time
from typing import Annotated, Any, Literal, TypeVar, get_args, get_origin

from pydantic import ConfigDict, ValidationError

from pipelines.errors import ConfigError

SECTION = ConfigDict(extra="forbid", strict=True)
"""The config of every settings section: no unknown keys, no silent type conversion."""

T = TypeVar("T")

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def toml_value(value: Any) -> str:
    """`value` as TOML writes it (inline), for messages and `gpufleet config`."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, (datetime, date, time)):
        return value.isoformat()
    if isinstance(value, Mapping):
        items = ", ".join(f"{toml_key(k)} = {toml_value(v)}" for k, v in value.items())
        return "{ " + items + " }" if items else "{}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return json.dumps(str(value))


def toml_key(key: Any) -> str:
    text = str(key)
    return text if _BARE_KEY.match(text) else json.dumps(text, ensure_ascii=False)


_NOUNS = {
    bool: ("true or false", "booleans"),
    int: ("an integer", "integers"),
    float: ("a number", "numbers"),
    str: ("a string", "strings"),
}


def describe_type(
    annotation: Any, metadata: list[Any] | tuple[Any, ...] = (), plural: bool = False
) -> str:
    """`list[str]` -> `a list of strings`, `int` with `Gt(0)` -> `an integer > 0`."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        return describe_type(args[0], [*metadata, *args[1:]], plural)
    if origin is list:
        text = ("lists of " if plural else "a list of ") + describe_type(args[0], (), True)
    elif origin is dict:
        text = ("tables of " if plural else "a table of ") + describe_type(args[1], (), True)
    elif origin is Literal:
        text = "one of " + ", ".join(toml_value(v) for v in args)
    elif annotation in _NOUNS:
        text = _NOUNS[annotation][1 if plural else 0]
    else:
        text = getattr(annotation, "__name__", str(annotation))
    bounds = []
    for item in metadata:
        for attribute, sign in (("gt", ">"), ("ge", ">="), ("lt", "<"), ("le", "<=")):
            bound = getattr(item, attribute, None)
            if bound is not None:
                bounds.append(f"{sign} {bound}")
    return f"{text} {' and '.join(bounds)}" if bounds else text


def _dotted(section: str, loc: tuple[Any, ...]) -> str:
    text = section
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else f".{part}"
    return text


def _error_line(
    cls: type, section: str, error: Any, origins: Mapping[str, str], default_origin: str
) -> str:
    loc = tuple(error["loc"])
    key = str(loc[0]) if loc else ""
    origin = origins.get(key, default_origin)
    fields = cls.__pydantic_fields__  # type: ignore[attr-defined]
    if error["type"] == "unexpected_keyword_argument" or key not in fields:
        close = difflib.get_close_matches(key, list(fields), n=1)
        guess = f"did you mean `{close[0]}`?" if close else f"known: {', '.join(fields)}."
        return (
            f"{origin}: unknown setting `{section}.{key}` = {toml_value(error['input'])}; {guess}"
        )
    field = fields[key]
    expected = describe_type(field.annotation, field.metadata)
    line = f"{origin}: `{_dotted(section, loc)}` must be {expected}"
    if len(loc) > 1:
        line = f"{origin}: `{section}.{key}` must be {expected}; `{_dotted(section, loc)}`"
    if error["type"] in ("value_error", "assertion_error"):
        # A check across the value (e.g. one entry of a table): its message names the culprit.
        return f"{origin}: `{_dotted(section, loc)}`: {error['msg'].removeprefix('Value error, ')}."
    return line + f", got {toml_value(error['input'])}."


def build_section(
    cls: type[T],
    section: str,
    values: Any,
    origin: str,
    origins: Mapping[str, str] | None = None,
) -> T:
    """`cls(**values)`, or a `ConfigError` with one line per invalid setting.

    `origin` names where the section came from (a file); `origins` overrides it per key
    (a setting from an environment variable).
    """
    if not isinstance(values, Mapping):
        raise ConfigError(
            f"{origin}: `{section}` must be a [{section}] table, got {toml_value(values)}.",
            f"Write the settings under a `[{section}]` header.",
        )
    try:
        return cls(**values)
    except ValidationError as e:
        lines = [_error_line(cls, section, err, origins or {}, origin) for err in e.errors()]
        raise ConfigError(
            "\n".join(dict.fromkeys(lines)),
            "Fix the value or delete it to use the default; `gpufleet config` lists every setting.",
        ) from None
