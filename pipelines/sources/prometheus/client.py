"""The HTTP client: one instant query at a time, with retries, credentials from the
environment, a deadline per request, partial answers detected, and errors that never quote
a secret."""

from __future__ import annotations

import http.client
import json
import os
import re
import ssl
import time
import unicodedata
import warnings
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import requests
import urllib3
from urllib3.exceptions import InsecureRequestWarning

from pipelines.errors import ConfigError, SourceError
from pipelines.sources.prometheus.settings import PrometheusSettings


def redact_url(url: str) -> str:
    """`url` without user:password, for messages and watermark keys."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path.rstrip("/"), "", ""))


class _Transient(Exception):
    """A failure worth retrying (5xx/429, network, timeout, cut-off body); `title` ends the run if it lasts."""

    def __init__(self, title: str, hint: str) -> None:
        super().__init__(title)
        self.title, self.hint = title, hint


@dataclass
class Answer:
    """One query's answer: the `result` list, and what the store said about it."""

    result: list[dict[str, Any]]
    partial: list[str] = field(default_factory=list)
    """Why the store says the answer is incomplete (its `warnings`, VictoriaMetrics' `isPartial`); empty when complete."""
    notes: list[str] = field(default_factory=list)
    """PromQL annotations (`warnings`, `infos`) on a complete answer, shown to the operator."""


# Prometheus (2.45+), Thanos, Mimir and Cortex prefix the annotations of the query engine;
# they describe the query, not the store, so the answer is still complete.
_ANNOTATION = re.compile(r"^\s*PromQL (warning|info)\b", re.IGNORECASE)
_READ_BYTES = 1 << 16


def read_credentials(env: dict[str, str]) -> tuple[dict[str, str], tuple[str, str] | None]:
    """(headers, basic auth) from GPUFLEET_PROM_TOKEN or GPUFLEET_PROM_USER/PASSWORD in `env`.

    A value with whitespace or control characters (a trailing newline from `echo token > file`)
    is refused with a message naming the variable, never the value: requests would otherwise
    reject the header with a message that quotes it.
    """
    headers: dict[str, str] = {}
    token = env.get("GPUFLEET_PROM_TOKEN", "")
    if token:
        _check_secret("GPUFLEET_PROM_TOKEN", token, spaces_inside=False)
        headers["Authorization"] = f"Bearer {token}"
        return headers, None
    user = env.get("GPUFLEET_PROM_USER", "")
    if not user:
        return headers, None
    password = env.get("GPUFLEET_PROM_PASSWORD", "")
    _check_secret("GPUFLEET_PROM_USER", user, spaces_inside=False)
    if ":" in user:
        raise ConfigError(
            "GPUFLEET_PROM_USER contains a `:`, which basic auth cannot carry.",
            "Set the user name alone in GPUFLEET_PROM_USER and the password in GPUFLEET_PROM_PASSWORD.",
        )
    if password:
        _check_secret("GPUFLEET_PROM_PASSWORD", password, spaces_inside=True)
    return headers, (user, password)


def _check_secret(name: str, value: str, *, spaces_inside: bool) -> None:
    bad_inside = any(
        unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") or (c.isspace() and not spaces_inside)
        for c in value
    )
    if bad_inside or value != value.strip():
        raise ConfigError(
            f"{name} contains whitespace or control characters (e.g. a trailing newline); it was not used.",
            f"Set {name} to the secret alone: write the file with `printf %s` or `echo -n`, "
            "or read it with `$(tr -d '\\n' < file)`.",
        )


class PrometheusClient:
    """Instant queries over requests: explicit retries, auth and CA bundle from the environment,
    partial answers detected, one deadline per request, clear errors that never quote a secret."""

    def __init__(
        self,
        url: str,
        settings: PrometheusSettings,
        *,
        insecure: bool = False,
        env: dict[str, str] | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        env = dict(os.environ if env is None else env)
        if not urlsplit(url).scheme or not urlsplit(url).netloc:
            raise ConfigError(
                f"`{redact_url(url)}` is not a URL.", "Pass e.g. --url http://prometheus:9090."
            )
        headers, auth = read_credentials(env)
        headers["Accept-Encoding"] = "gzip" if settings.compress else "identity"
        self.shown_url = redact_url(url)
        self.settings = settings
        self.insecure = insecure
        self._sleep = sleep
        self._endpoint = url.rstrip("/") + "/api/v1/query"
        self._session = requests.Session()
        self._session.verify = False if insecure else _ca_bundle(env) or True
        self._session.headers.update(headers)
        self._session.auth = auth
        # requests would read proxies and .netrc credentials from the process environment.
        self._session.trust_env = False
        self.requests_made = 0
        self.partial_retries = 0
        self.history: list[tuple[str, int]] = []
        """(PromQL, evaluation time in ms) of every query sent, for benchmarks and audits."""

    def close(self) -> None:
        self._session.close()

    def query(self, promql: str, at_ms: int) -> Answer:
        """One instant query at `at_ms`. Retries 5xx/429, network failures, cut-off bodies and
        partial answers with backoff; returns the last answer, partial or not."""
        self.history.append((promql, at_ms))
        delay = self.settings.backoff_s
        retries = self.settings.retries
        for attempt in range(retries + 1):
            last = attempt == retries
            self.requests_made += 1
            try:
                answer = self._request(promql, at_ms)
            except _Transient as e:
                if last:
                    raise SourceError(f"{e.title} after {retries} retries.", e.hint) from None
            else:
                if not answer.partial or last:
                    return answer
                self.partial_retries += 1
            self._sleep(delay)
            delay *= 2
        raise AssertionError("unreachable")

    def _request(self, promql: str, at_ms: int) -> Answer:
        timeout = self.settings.timeout_s
        deadline = time.monotonic() + timeout
        form = {
            "query": promql,
            "time": f"{at_ms / 1000:.3f}",
            # Ask for a complete answer or an error: Thanos and VictoriaMetrics cluster would
            # otherwise answer without an unavailable store; Prometheus ignores both.
            "partial_response": "false",
            "deny_partial_response": "1",
        }
        network_hint = (
            "Check --url and the network (and `prometheus.timeout_s`); nothing was loaded."
        )
        try:
            with warnings.catch_warnings():
                if self.insecure:  # said once, in the report, instead of on every request
                    warnings.simplefilter("ignore", InsecureRequestWarning)
                # `total`: connecting and waiting for the headers share the one deadline.
                # requests hands a urllib3 Timeout through as is; its stubs know only numbers.
                total = urllib3.Timeout(total=timeout)
                response = self._session.post(
                    self._endpoint,
                    data=form,
                    timeout=total,  # type: ignore[arg-type]
                    stream=True,
                )
        except requests.exceptions.SSLError as e:
            raise _tls_error(self.shown_url, e) from None
        except requests.Timeout:
            raise _Transient(f"Prometheus at {self.shown_url} timed out", network_hint) from None
        except requests.ConnectionError:
            raise _Transient(
                f"Prometheus at {self.shown_url} could not be reached", network_hint
            ) from None
        except requests.RequestException:
            # Never formatted: such an exception may quote a request header.
            raise SourceError(
                f"The request to {self.shown_url} could not be sent.",
                "Check --url and the credentials in the environment; nothing was loaded.",
            ) from None
        try:
            body = self._read_body(response, deadline)
        finally:
            response.close()
        status = response.status_code
        if status >= 500 or status == 429:
            raise _Transient(
                f"Prometheus at {self.shown_url} kept failing (HTTP {status})",
                "Check the server's health and try again; nothing was loaded.",
            )
        if status in (401, 403):
            raise SourceError(
                f"Prometheus at {self.shown_url} refused the request (HTTP {status}).",
                "Set GPUFLEET_PROM_TOKEN (bearer) or GPUFLEET_PROM_USER and GPUFLEET_PROM_PASSWORD.",
            )
        payload = self._decode_json(body, status, response.headers.get("Content-Type", ""))
        if payload.get("status") == "error" or status != 200:
            detail = _one_line(
                str(payload.get("error") or payload.get("errorType") or "no error text")
            )
            if status == 422:
                # "execution" errors: a broken query, or (Thanos, VictoriaMetrics asked for no
                # partial answer) a store that did not answer; worth the retries.
                raise _Transient(
                    f"Prometheus at {self.shown_url} could not run the query `{promql}` (HTTP 422: {detail})",
                    "When a store behind the server is down (a Thanos store gateway, a vmstorage node), run "
                    "again when it is back; else fix the selector in [prometheus]. Nothing was loaded.",
                )
            if status == 200:
                raise SourceError(
                    f"Prometheus at {self.shown_url} answered the query `{promql}` with an error: {detail}",
                    "The server reported a failure with HTTP 200; check its logs and run again; nothing was loaded.",
                )
            raise self._rejected(status, detail, promql)
        data = payload.get("data")
        if not isinstance(data, dict) or not isinstance(data.get("result"), list):
            raise SourceError(
                f"{self.shown_url} answered without a `data.result` list.",
                "Point --url at the server root (the part before /api/v1).",
            )
        said = [_one_line(str(w)) for w in payload.get("warnings") or [] if str(w).strip()]
        partial = [w for w in said if not _ANNOTATION.match(w)]
        if payload.get("isPartial") is True:
            partial.append("isPartial: true (some storage nodes did not answer)")
        notes = (
            []
            if partial
            else said + [_one_line(str(i)) for i in payload.get("infos") or [] if str(i).strip()]
        )
        return Answer(data["result"], partial, notes)

    def _read_body(self, response: requests.Response, deadline: float) -> bytes:
        """The whole body within `deadline` (a server that trickles bytes cannot hold the run)."""
        raw = response.raw
        parts: list[bytes] = []
        announced = response.headers.get("Content-Length")
        timeout_hint = (
            "Raise `prometheus.timeout_s`, or shorten `prometheus.chunk_s`; nothing was loaded."
        )
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise _Transient(
                    f"Prometheus at {self.shown_url} timed out (the answer was not complete within "
                    f"timeout_s = {self.settings.timeout_s:g} s, {raw.tell():,} bytes received)",
                    timeout_hint,
                )
            connection = getattr(raw, "connection", None)
            sock = getattr(connection, "sock", None)
            if sock is not None:
                sock.settimeout(remaining)
            try:
                piece = raw.read1(_READ_BYTES, decode_content=False)
            except (
                urllib3.exceptions.ProtocolError,
                urllib3.exceptions.IncompleteRead,
                http.client.HTTPException,
                ConnectionError,
            ):
                raise _Transient(
                    self._cut_off(raw.tell(), announced),
                    "Check the network and any proxy in between; nothing was loaded.",
                ) from None
            except (TimeoutError, urllib3.exceptions.ReadTimeoutError):
                continue  # the deadline check above ends it
            if not piece:
                break
            parts.append(piece)
        body = b"".join(parts)
        if announced and announced.isdigit() and len(body) < int(announced):
            raise _Transient(
                self._cut_off(len(body), announced),
                "Check the network and any proxy in between; nothing was loaded.",
            )
        encoding = response.headers.get("Content-Encoding", "").lower().strip()
        if encoding in ("gzip", "x-gzip", "deflate"):
            try:
                inflater = zlib.decompressobj(zlib.MAX_WBITS | 32)  # gzip or zlib header
                decoded = inflater.decompress(body) + inflater.flush()
            except zlib.error:
                raise _Transient(
                    self._cut_off(len(body), announced, compressed=True),
                    "Check the network and any proxy in between; nothing was loaded.",
                ) from None
            if not inflater.eof:
                raise _Transient(
                    self._cut_off(len(body), announced, compressed=True),
                    "Check the network and any proxy in between; nothing was loaded.",
                )
            return decoded
        return body

    def _cut_off(self, received: int, announced: str | None, compressed: bool = False) -> str:
        of = f" of {int(announced):,} announced" if announced and announced.isdigit() else ""
        what = "compressed " if compressed else ""
        return f"The answer of Prometheus at {self.shown_url} was cut off after {received:,} {what}bytes{of}"

    def _decode_json(self, body: bytes, status: int, content_type: str) -> dict[str, Any]:
        try:
            payload = json.loads(body)
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            pos = getattr(e, "pos", 0)
            looks_json = body.lstrip()[:1] in (b"{", b"[")
            if looks_json and pos >= len(body.rstrip()):
                raise SourceError(
                    f"The answer of Prometheus at {self.shown_url} ends in the middle of its JSON "
                    f"({len(body):,} bytes): it was cut off.",
                    "Check the network and any proxy in between (a body size limit?); nothing was loaded.",
                ) from None
            kind = content_type.split(";")[0].strip() or "no content type"
            raise SourceError(
                f"{self.shown_url} did not answer with JSON (HTTP {status}, {kind}, {len(body):,} bytes).",
                "Point --url at the server root (the part before /api/v1) of a Prometheus-compatible API.",
            ) from None
        if not isinstance(payload, dict):
            raise SourceError(
                f"{self.shown_url} answered with JSON that is not a Prometheus API envelope.",
                "Point --url at the server root (the part before /api/v1).",
            )
        return payload

    def _rejected(self, status: int, detail: str, promql: str) -> SourceError:
        return SourceError(
            f"Prometheus at {self.shown_url} rejected the query `{promql}` (HTTP {status}): {detail}",
            "Fix the selector or matchers in the [prometheus] section of gpufleet.toml.",
        )


def _one_line(text: str, limit: int = 300) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _ca_bundle(env: dict[str, str]) -> str | None:
    """The CA bundle named by REQUESTS_CA_BUNDLE (or CURL_CA_BUNDLE) in `env`.

    requests itself reads them from `os.environ` only, so an `env` passed in (embedding,
    tests) would otherwise not reach it.
    """
    for name in ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"):
        path = env.get(name)
        if path:
            if not os.path.exists(path):
                raise ConfigError(
                    f"The CA bundle `{path}` named by {name} does not exist.",
                    f"Point {name} at a PEM file of the CAs that signed the server's certificate.",
                )
            return path
    return None


def _tls_error(shown_url: str, error: requests.exceptions.SSLError) -> SourceError:
    cause = _ssl_cause(error)
    if isinstance(cause, ssl.SSLCertVerificationError):
        return SourceError(
            f"The TLS certificate of {shown_url} could not be verified: {cause.verify_message.rstrip('.')}.",
            "Set REQUESTS_CA_BUNDLE to a PEM file of the CAs that signed it, or pass --insecure "
            "to skip verification.",
        )
    reason = (
        cause.reason.lower().replace("_", " ")
        if cause is not None and cause.reason
        else "no details"
    )
    return SourceError(
        f"The TLS handshake with {shown_url} failed ({reason}).",
        "Check that the server speaks HTTPS on that port, or use an http:// URL.",
    )


def _ssl_cause(error: BaseException) -> ssl.SSLError | None:
    """The `ssl` error under the requests and urllib3 wrappers (causes, contexts, `reason`)."""
    pending: list[object] = [error]
    seen: set[int] = set()
    while pending:
        e = pending.pop()
        if not isinstance(e, BaseException) or id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, ssl.SSLError):
            return e
        pending.extend([e.__cause__, e.__context__, getattr(e, "reason", None), *e.args])
    return None
