"""Prometheus source: dcgm-exporter, kube-state-metrics and node-exporter series from any
Prometheus-compatible HTTP API (Prometheus, Thanos, Mimir, VictoriaMetrics).

Raw samples, not evaluations: every query is a range selector `selector[<d>ms]` evaluated
once at the end of a time chunk through the instant query API (as prometheus-api-client's
`get_metric_range_data` does). `query_range` would evaluate at each step and fill a
telemetry gap with the last sample for up to the lookback delta, hiding the very gaps that
make a node `unknown`.

Time chunks are half-open `[a, b)`: the selector is evaluated at `b - 1 ms` over `b - a`
and samples outside `[a, b)` are dropped, which is exact whether the server treats range
selectors as left-open (Prometheus 3) or closed (Prometheus 2). A stored watermark per
query (table `ingest_watermarks`) is the end of the last chunk loaded, so a re-run fetches
only what is new. A run is one transaction: fetched chunks are staged in temporary tables
and loaded, with the new watermarks, all at once or not at all.

A partial answer (API `warnings` from Thanos, Mimir or Cortex when a store is down,
VictoriaMetrics' `"isPartial": true`) is never loaded as complete: it is retried, and if it
stays partial its query stops there (the watermark stays at the chunk's start), or, with
`allow_partial`, what came is loaded and the window recorded in `ingest_incomplete` until a
later run gets it complete. Non-finite samples are skipped and counted.

`downsample_s` is the explicit push-down for fleets whose raw samples do not fit one
machine: each selector becomes a subquery `<fn>_over_time(selector[step])[d:step]`
(`max` for counters, `avg` for gauges, `last` for states), computed by the server.
"""

from __future__ import annotations

import http.client
import json
import math
import os
import re
import ssl
import time
import unicodedata
import warnings
import zlib
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar
from urllib.parse import urlsplit, urlunsplit

import duckdb
import numpy as np
import polars as pl
import requests
import urllib3
from pydantic import NonNegativeFloat, NonNegativeInt, PositiveFloat, PositiveInt, field_validator
from pydantic.dataclasses import dataclass as settings_dataclass
from urllib3.exceptions import InsecureRequestWarning

from pipelines.contract import NATURAL_KEYS
from pipelines.errors import ConfigError, SourceError
from pipelines.settings_model import SECTION, build_section
from pipelines.sources.pci import normalise_pci_bus_id
from pipelines.sources.protocol import Source, SourceReport
from pipelines.store import (
    ROW_COLUMN,
    LoadResult,
    TableInput,
    ensure_schema,
    load_batch,
    quote_ident,
)

MAX_POINTS_PER_SERIES = 11_000
"""Prometheus refuses a query whose result has more points than this per series."""

DEFAULT_GPU_METRICS: tuple[str, ...] = (
    # In dcgm-exporter's default counters file:
    "DCGM_FI_DEV_SM_CLOCK",
    "DCGM_FI_DEV_MEM_CLOCK",
    "DCGM_FI_DEV_GPU_TEMP",
    "DCGM_FI_DEV_MEMORY_TEMP",
    "DCGM_FI_DEV_POWER_USAGE",
    "DCGM_FI_DEV_GPU_UTIL",
    "DCGM_FI_DEV_FB_USED",
    "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
    "DCGM_FI_DEV_XID_ERRORS",
    "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
    "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS",
    "DCGM_FI_DEV_ROW_REMAP_FAILURE",
    "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL",
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
    "DCGM_FI_PROF_DRAM_ACTIVE",
    # Off in the default counters file; enable them (docs/sources.md):
    "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL",
    "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
    "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL",
    "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL",
    "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL",
    "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL",
    "DCGM_FI_DEV_POWER_VIOLATION",
    "DCGM_FI_DEV_THERMAL_VIOLATION",
    "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS",
)

DEFAULT_NODE_METRICS: dict[str, dict[str, str]] = {
    # node-exporter's infiniband collector: state_id 4 is ACTIVE; one series per device and port.
    "nic_links_up": {
        "selector": "node_infiniband_state_id",
        "sample_sql": "CAST(value = 4 AS DOUBLE)",
    },
    "nic_link_errors_total": {
        "selector": '{__name__=~"node_infiniband_(symbol_error|link_error_recovery|link_downed'
        '|port_errors_received)_total"}',
        "sample_sql": "value",
    },
}

_COUNTER_HINTS = ("_TOTAL", "VIOLATION", "COUNTER", "REMAPPED_ROWS", "_total")


@settings_dataclass(frozen=True, config=SECTION)
class PrometheusSettings:
    """The `[prometheus]` section of `gpufleet.toml`: which series land where, and how to fetch."""

    chunk_s: PositiveInt = 21600
    """Length of one range fetch, seconds (capped so no series exceeds 11,000 points). Longer
    chunks mean fewer requests (faster) but bigger responses: 6 h of a 512-GPU fleet scraped
    every 30 s is ~370k samples per response."""
    scrape_interval_s: PositiveFloat = 30.0
    """The exporters' scrape interval, seconds; bounds the chunk and is the promql step."""
    timeout_s: PositiveFloat = 60.0
    """Deadline of one request, seconds, from connecting to the last byte of the answer."""
    settle_s: NonNegativeInt = 120
    """Never read closer than this to now: samples still in flight (a scrape being appended,
    remote-write lag in Mimir or Thanos receive) would otherwise fall behind the watermark."""
    compress: bool = True
    """Ask for gzip responses: less network, more CPU on both ends. Off for a server on the same host or LAN."""
    retries: NonNegativeInt = 4
    """Retries of a request that timed out, could not connect, got HTTP 429/5xx, or whose answer
    was cut off or partial (a store of Thanos or VictoriaMetrics did not answer)."""
    backoff_s: NonNegativeFloat = 1.0
    """First retry delay, seconds; doubles each retry."""
    node_labels: list[str] = field(
        default_factory=lambda: ["node", "Hostname", "hostname", "instance"]
    )
    """Labels naming the node, first present wins (`instance` loses its `:port`)."""
    matchers: str = ""
    """Extra label matchers for the dcgm-exporter selectors, e.g. `job="dcgm-exporter"`."""
    gpu_metrics: list[str] = field(default_factory=lambda: list(DEFAULT_GPU_METRICS))
    xid_count_metric: str = "DCGM_EXP_XID_ERRORS_COUNT"
    """XIDs per code in a sliding window (label `xid`): a rise is an XID event. Empty: off."""
    xid_last_metric: str = "DCGM_FI_DEV_XID_ERRORS"
    """The last XID of a GPU: a change to a non-zero value is an XID event. Empty: off."""
    xid_seed_lookback_s: NonNegativeInt = 900
    """How far before a chunk to look for the previous XID value (to detect a change)."""
    condition_metric: str = "kube_node_status_condition"
    unschedulable_metric: str = "kube_node_spec_unschedulable"
    cluster: str = "default"
    """Cluster name for nodes whose series carry no `cluster` label."""
    cluster_label: str = "cluster"
    gpu_count_labels: list[str] = field(default_factory=lambda: ["label_nvidia_com_gpu_count"])
    gpu_model_labels: list[str] = field(default_factory=lambda: ["label_nvidia_com_gpu_product"])
    instance_type_labels: list[str] = field(
        default_factory=lambda: [
            "label_node_kubernetes_io_instance_type",
            "label_beta_kubernetes_io_instance_type",
        ]
    )
    nic_expected_label: str = "label_gpufleet_io_nic_expected"
    nic_expected_by_instance_type: dict[str, NonNegativeInt] = field(default_factory=dict)
    """Links each instance type should have up. Empty by default (no type is checked); an example
    to fill in, not a default: `{"p5.48xlarge" = 32}` (EFA adapters of a p5)."""
    inventory_lookback_s: PositiveInt = 3600
    """The node inventory is the newest label set seen this long before the end."""
    node_metrics: dict[str, dict[str, str]] = field(
        default_factory=lambda: dict(DEFAULT_NODE_METRICS)
    )
    """Canonical node metric → `{selector, sample_sql}` (raw samples, `sample_sql` per sample,
    summed per node and timestamp) or `{promql}` (evaluated at the scrape interval)."""
    downsample_functions: dict[str, str] = field(default_factory=dict)
    """Per-metric `_over_time` function for `--downsample`, overriding max/avg/last."""

    @field_validator("node_metrics")
    @classmethod
    def _node_metric_specs(cls, value: dict[str, dict[str, str]]) -> dict[str, dict[str, str]]:
        for name, spec in value.items():
            if not ({"selector", "promql"} & set(spec)):
                raise ValueError(
                    f"`{name}` needs a `selector` or a `promql` key, e.g. nic_links_up = "
                    '{ selector = "node_infiniband_state_id", sample_sql = "CAST(value = 4 AS DOUBLE)" }'
                )
        return value

    @classmethod
    def from_extra(
        cls, extra: dict[str, Any], origin: str = "settings", origins: dict[str, str] | None = None
    ) -> PrometheusSettings:
        """The `[prometheus]` table of `extra`, validated; `node_metrics` adds to the defaults."""
        values = extra.get("prometheus", {})
        if isinstance(values, dict) and isinstance(values.get("node_metrics"), dict):
            values = values | {"node_metrics": DEFAULT_NODE_METRICS | values["node_metrics"]}
        return build_section(cls, "prometheus", values, origin, origins)


def _ms(t: datetime) -> int:
    return round(t.timestamp() * 1000)


def _dt(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, UTC)


def chunks(start_ms: int, end_ms: int, chunk_ms: int) -> list[tuple[int, int]]:
    """Half-open `[a, b)` chunks covering `[start_ms, end_ms)` exactly, none empty."""
    if chunk_ms <= 0:
        raise ValueError("chunk_ms must be positive")
    out = []
    a = start_ms
    while a < end_ms:
        b = min(a + chunk_ms, end_ms)
        out.append((a, b))
        a = b
    return out


def redact_url(url: str) -> str:
    """`url` without user:password, for messages and watermark keys."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path.rstrip("/"), "", ""))


# ---------------------------------------------------------------- the HTTP client


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
                response = self._session.post(
                    self._endpoint, data=form, timeout=urllib3.Timeout(total=timeout), stream=True
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


# ---------------------------------------------------------------- label handling


def node_of(labels: dict[str, str], node_labels: Iterable[str]) -> str | None:
    """The node a series belongs to: the first non-empty label of `node_labels`."""
    for name in node_labels:
        value = labels.get(name)
        if value:
            if name == "instance":
                value = re.sub(r":\d+$", "", value).strip("[]")
            return value
    return None


@dataclass
class Chunk:
    """One query's answer for one chunk, columnar: series `i` owns `counts[i]` consecutive samples."""

    labels: list[dict[str, str]]
    counts: np.ndarray  # int64, one per series, all > 0
    ts: np.ndarray  # int64 ms
    values: np.ndarray  # float64

    @property
    def samples(self) -> int:
        return int(self.ts.size)

    def series_ids(self) -> np.ndarray:
        return np.repeat(np.arange(len(self.labels)), self.counts)

    def series(self) -> Iterable[tuple[dict[str, str], list[int], list[float]]]:
        """(labels, ts_ms, values) per series, for consumers that walk samples in order."""
        bounds = np.concatenate(([0], np.cumsum(self.counts)))
        for i, labels in enumerate(self.labels):
            lo, hi = bounds[i], bounds[i + 1]
            yield labels, self.ts[lo:hi].tolist(), self.values[lo:hi].tolist()


def _matrix(result: list[dict[str, Any]], a_ms: int, b_ms: int) -> tuple[Chunk, int]:
    """The series of a range-selector answer, samples kept only in `[a_ms, b_ms)`, and the
    number of non-finite samples (`+Inf`, `-Inf`, `NaN`) left out: no landing table takes
    them (a sample that is not a number is not a reading), so they count as missing."""
    labels: list[dict[str, str]] = []
    counts: list[int] = []
    flat_ts: list[float] = []
    flat_v: list[str] = []
    for series in result:
        values = series.get("values")
        if not values:
            continue
        raw_ts, raw_v = zip(*values, strict=True)
        flat_ts.extend(raw_ts)
        flat_v.extend(raw_v)
        counts.append(len(raw_ts))
        labels.append(series["metric"])
    ts = np.rint(np.asarray(flat_ts, dtype=np.float64) * 1000).astype(np.int64)
    vals = np.asarray(flat_v, dtype=np.float64)  # parses "NaN", "+Inf" as Prometheus writes them
    count_arr = np.asarray(counts, dtype=np.int64)
    in_window = (ts >= a_ms) & (ts < b_ms)
    keep = in_window & np.isfinite(vals)
    non_finite = int((in_window & ~np.isfinite(vals)).sum())
    if not keep.all():
        ids = np.repeat(np.arange(len(labels)), count_arr)[keep]
        count_arr = np.bincount(ids, minlength=len(labels)).astype(np.int64)
        ts, vals = ts[keep], vals[keep]
        nonempty = count_arr > 0
        labels = [lab for lab, ok in zip(labels, nonempty, strict=True) if ok]
        count_arr = count_arr[nonempty]
    return Chunk(labels, count_arr, ts, vals), non_finite


# ---------------------------------------------------------------- staging


_STAGE_COLUMNS = {
    "gpu_samples": "cluster VARCHAR, ts TIMESTAMPTZ, node VARCHAR, gpu SMALLINT, uuid VARCHAR, metric VARCHAR, value DOUBLE",
    "gpu_instance_samples": "cluster VARCHAR, ts TIMESTAMPTZ, node VARCHAR, gpu SMALLINT, uuid VARCHAR, gpu_i_id SMALLINT, "
    "gpu_i_profile VARCHAR, job_id VARCHAR, metric VARCHAR, value DOUBLE",
    "node_samples": "cluster VARCHAR, ts TIMESTAMPTZ, node VARCHAR, metric VARCHAR, value DOUBLE",
    "node_conditions": "cluster VARCHAR, ts TIMESTAMPTZ, node VARCHAR, condition VARCHAR, status VARCHAR, reason VARCHAR, message VARCHAR",
    "gpu_events": "cluster VARCHAR, ts TIMESTAMPTZ, node VARCHAR, gpu SMALLINT, uuid VARCHAR, kind VARCHAR, code INTEGER, message VARCHAR, source VARCHAR",
}


# Tables whose chunks are deduplicated as they land (one query per metric, chunks disjoint
# in time), so the staged rows are already unique by natural key.
_UNIQUE_PER_CHUNK = frozenset({"gpu_samples", "gpu_instance_samples", "node_samples"})


class Stage:
    """Collects fetched chunks until the one load transaction.

    Frames are buffered in memory and spilled to temporary tables every
    `SPILL_ROWS` rows, so a long backfill does not have to fit in memory.
    """

    SPILL_ROWS = 2_000_000

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con = con
        self.rows: dict[str, int] = defaultdict(int)
        self.buffer: dict[str, list[pl.DataFrame]] = defaultdict(list)
        self.buffered: dict[str, int] = defaultdict(int)
        self.spilled: set[str] = set()
        self.views: list[str] = []
        self.finals: list[str] = []

    def add(self, table: str, frame: pl.DataFrame) -> None:
        if frame.is_empty():
            return
        frame = frame.with_row_index(ROW_COLUMN, offset=self.rows[table] + 1)
        self.buffer[table].append(frame)
        self.buffered[table] += frame.height
        self.rows[table] += frame.height
        if self.buffered[table] >= self.SPILL_ROWS:
            self._spill(table)

    def _frame(self, table: str) -> pl.DataFrame:
        frame = pl.concat(self.buffer[table], how="diagonal_relaxed")
        self.buffer[table], self.buffered[table] = [], 0
        return frame

    def _spill(self, table: str) -> None:
        if not self.buffer[table]:
            return
        frame = self._frame(table)
        if table not in self.spilled:
            self.con.execute(
                f"CREATE OR REPLACE TEMP TABLE __stage_{table} ({_STAGE_COLUMNS[table]}, {ROW_COLUMN} BIGINT)"
            )
            self.spilled.add(table)
        self.con.register("__chunk", frame)
        try:
            columns = ", ".join(quote_ident(c) for c in frame.columns)
            self.con.execute(
                f"INSERT INTO __stage_{table} ({columns}) SELECT {columns} FROM __chunk"
            )
        finally:
            self.con.unregister("__chunk")

    def inputs(self, origin: str) -> list[TableInput]:
        items = []
        for table in _STAGE_COLUMNS:
            if not self.rows[table]:
                continue
            if table in self.spilled:
                self._spill(table)
                source = f"__stage_{table}"
            else:
                source = f"__staged_{table}"
                self.con.register(source, self._frame(table))
                self.views.append(source)
            if table in _UNIQUE_PER_CHUNK:
                items.append(
                    TableInput(
                        table, self.con.sql(f"SELECT * FROM {source}"), origin, position="row"
                    )
                )
                continue
            keys = ", ".join(quote_ident(k) for k in NATURAL_KEYS[table])
            # The same event or condition seen by two queries lands once.
            # Materialised once: the loader scans its input twice (validate, merge).
            self.con.execute(
                f"CREATE OR REPLACE TEMP TABLE __final_{table} AS SELECT * FROM {source} "
                f"QUALIFY row_number() OVER (PARTITION BY {keys} ORDER BY {ROW_COLUMN}) = 1"
            )
            self.finals.append(f"__final_{table}")
            relation = self.con.sql(f"SELECT * FROM __final_{table}")
            items.append(TableInput(table, relation, origin, position="row"))
        return items

    def drop(self) -> None:
        for view in self.views:
            self.con.unregister(view)
        for table in self.spilled:
            self.con.execute(f"DROP TABLE IF EXISTS __stage_{table}")
        for final in self.finals:
            self.con.execute(f"DROP TABLE IF EXISTS {final}")


# ---------------------------------------------------------------- the ingest


@dataclass
class QueryReport:
    key: str
    start: datetime
    end: datetime
    samples: int = 0
    series: int = 0


@dataclass(frozen=True)
class PartialChunk:
    """A chunk `[start, end)` of one query the store kept answering only in part."""

    query_key: str
    start: datetime
    end: datetime
    warning: str
    """What the store said (its first `warnings` entry, or `isPartial: true`)."""
    loaded: bool
    """True when what came was loaded and the window recorded as incomplete (--allow-partial)."""


@dataclass
class IngestReport:
    """What one run fetched and loaded; `warnings` are plain sentences for the operator."""

    loads: list[LoadResult] = field(default_factory=list)
    queries: list[QueryReport] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    partial: list[PartialChunk] = field(default_factory=list)
    """Chunks still partial after the retries: loaded as incomplete, or left for the next run."""
    refilled: int = 0
    """Windows recorded as incomplete by an earlier run that came back complete this run."""
    samples_fetched: int = 0
    requests_made: int = 0
    seconds: float = 0.0
    history: list[tuple[str, int]] = field(default_factory=list)
    """(PromQL, evaluation time in ms) of every query sent."""

    @property
    def partial_refused(self) -> list[PartialChunk]:
        return [p for p in self.partial if not p.loaded]

    @property
    def partial_loaded(self) -> list[PartialChunk]:
        return [p for p in self.partial if p.loaded]


@dataclass(frozen=True)
class _Query:
    key: str
    selector: str
    kind: str  # gpu | xid_count | xid_last | condition | unschedulable | node
    name: str = ""  # canonical metric name for node metrics
    sample_sql: str = "value"
    promql: bool = False


def _queries(s: PrometheusSettings) -> list[_Query]:
    m = f"{{{s.matchers}}}" if s.matchers else ""
    out = [_Query(f"gpu:{name}", f"{name}{m}", "gpu") for name in dict.fromkeys(s.gpu_metrics)]
    if s.xid_count_metric:
        out.append(_Query("xid:count", f"{s.xid_count_metric}{m}", "xid_count"))
    if s.xid_last_metric:
        out.append(_Query("xid:last", f"{s.xid_last_metric}{m}", "xid_last"))
    if s.condition_metric:
        out.append(_Query("kube:conditions", s.condition_metric, "condition"))
    if s.unschedulable_metric:
        out.append(_Query("kube:unschedulable", s.unschedulable_metric, "unschedulable"))
    for name, spec in s.node_metrics.items():
        if "promql" in spec:
            out.append(_Query(f"node:{name}", spec["promql"], "node", name, "value", promql=True))
        else:
            out.append(
                _Query(
                    f"node:{name}", spec["selector"], "node", name, spec.get("sample_sql", "value")
                )
            )
    return out


def _downsample_fn(q: _Query, s: PrometheusSettings) -> str:
    metric = q.name or q.selector.split("{")[0]
    if metric in s.downsample_functions:
        return s.downsample_functions[metric]
    if q.kind in ("condition", "unschedulable", "xid_last"):
        return "last"
    if (
        q.kind == "xid_count"
        or any(h in q.selector for h in _COUNTER_HINTS)
        or q.name.endswith("_total")
    ):
        return "max"
    return "avg"


def read_incomplete(
    con: duckdb.DuckDBPyConnection, source: str
) -> dict[str, list[tuple[datetime, datetime]]]:
    """Windows of `source` loaded from partial answers, per query key, oldest first."""
    rows = con.execute(
        "SELECT query_key, start_ts, end_ts FROM ingest_incomplete WHERE source = $source "
        "ORDER BY query_key, start_ts",
        {"source": source},
    ).fetchall()
    out: dict[str, list[tuple[datetime, datetime]]] = defaultdict(list)
    for key, a, b in rows:
        out[key].append((a, b))
    return dict(out)


def read_watermarks(con: duckdb.DuckDBPyConnection, source: str) -> dict[str, datetime]:
    rows = con.execute(
        "SELECT query_key, max(watermark_ts) FROM ingest_watermarks WHERE source = $source GROUP BY query_key",
        {"source": source},
    ).fetchall()
    return {k: v for k, v in rows}


# Kubernetes pod names end in the controller's suffix: Kubeflow replicas `-worker-0`, a batch
# Job's pods five random characters. What is left is the job's name (kube_jobs' job_id is
# `namespace/name`).
_REPLICA_SUFFIX = re.compile(r"-(?:master|worker|launcher|chief|ps|evaluator)-\d+$")
_JOB_POD_SUFFIX = re.compile(r"-[a-z0-9]{5}$")


def job_of_labels(labels: dict[str, str]) -> str | None:
    """The job a dcgm-exporter series names: Slurm `hpc_job`, else the pod's job
    (`namespace/<job>`, from `pod`/`namespace` or the 1.x `pod_name`/`pod_namespace`)."""
    if labels.get("hpc_job"):
        return labels["hpc_job"]
    pod = labels.get("pod") or labels.get("pod_name")
    if not pod:
        return None
    namespace = labels.get("namespace") or labels.get("pod_namespace") or "default"
    name, replaced = _REPLICA_SUFFIX.subn("", pod)
    if not replaced:
        name = _JOB_POD_SUFFIX.sub("", pod)
    return f"{namespace}/{name}"


def mig_instance(labels: dict[str, str]) -> tuple[int, str | None, str | None] | None:
    """(GPU_I_ID, GPU_I_PROFILE, job) of a MIG instance series; None for a whole-device series."""
    gi = labels.get("GPU_I_ID", "")
    if not gi.isdigit():
        return None
    return int(gi), labels.get("GPU_I_PROFILE") or None, job_of_labels(labels)


class _Ingest:
    def __init__(
        self,
        con: duckdb.DuckDBPyConnection,
        client: PrometheusClient,
        settings: PrometheusSettings,
        downsample_s: int | None,
        progress: Callable[[str], None] | None,
        after_chunk: Callable[[int], None] | None,
        allow_partial: bool = False,
        given_cluster: str | None = None,
    ) -> None:
        self.con, self.client, self.s = con, client, settings
        self.allow_partial = allow_partial
        self.given_cluster = given_cluster
        self.notes: dict[str, None] = {}
        self.downsample_s = downsample_s
        self.progress = progress or (lambda _msg: None)
        self.after_chunk = after_chunk
        self.report = IngestReport()
        self.stage = Stage(con)
        self.unnamed_series = 0
        self.non_finite = 0
        self.chunks_done = 0

    def chunk_ms(self) -> int:
        step = self.downsample_s or self.s.scrape_interval_s
        cap_s = MAX_POINTS_PER_SERIES * step
        return int(min(self.s.chunk_s, cap_s) * 1000)

    def promql(self, q: _Query, a_ms: int, b_ms: int) -> str:
        d = b_ms - a_ms
        if q.promql:
            step = int(self.downsample_s or self.s.scrape_interval_s)
            return f"({q.selector})[{d}ms:{step}s]"
        if self.downsample_s:
            step = int(self.downsample_s)
            return f"{_downsample_fn(q, self.s)}_over_time({q.selector}[{step}s])[{d}ms:{step}s]"
        return f"{q.selector}[{d}ms]"

    def ask(self, promql: str, at_ms: int) -> Answer:
        answer = self.client.query(promql, at_ms)
        for note in answer.notes:
            self.notes.setdefault(note)
        return answer

    def fetch(
        self, q: _Query, start_ms: int, end_ms: int, qr: QueryReport
    ) -> tuple[int, list[tuple[int, int, str]]]:
        """Fetch and stage `[start_ms, end_ms)` of `q` chunk by chunk.

        Returns (how far the answers were complete or loaded, the chunks that stayed partial).
        Without `allow_partial` the query stops at its first chunk that stays partial: the
        chunks before it are staged, nothing of it or after it is.
        """
        previous: dict[tuple, float] = {}
        seed_partial: str | None = None
        if q.kind in ("xid_count", "xid_last"):
            previous, seed_partial = self.seed_previous(q, start_ms)
        partial: list[tuple[int, int, str]] = []
        for a, b in chunks(start_ms, end_ms, self.chunk_ms()):
            self.progress(f"{q.key} {_dt(a):%Y-%m-%d %H:%M}")
            answer = self.ask(self.promql(q, a, b), b - 1)
            said = answer.partial[0] if answer.partial else seed_partial
            seed_partial = None  # it spoils the first chunk's events only
            if said is not None:
                partial.append((a, b, said))
                if not self.allow_partial:
                    return a, partial
            chunk, non_finite = _matrix(answer.result, a, b)
            del answer
            self.non_finite += non_finite
            qr.series += len(chunk.labels)
            qr.samples += chunk.samples
            self.report.samples_fetched += chunk.samples
            if said is None or q.kind == "gpu":
                # Of a partial answer only raw GPU samples land: every sample that came is
                # exact. Conditions (one-hot series), node metrics (summed over series) and
                # XID events (changes) would be wrong with a series missing; they land when
                # the window is re-fetched complete.
                self.land(q, chunk, previous)
            elif q.kind in ("xid_count", "xid_last") and b < end_ms:
                # The next chunk's XID changes must not be read against a state this one left out.
                previous, seed_partial = self.seed_previous(q, b)
            self.chunks_done += 1
            if self.after_chunk is not None:
                self.after_chunk(self.chunks_done)
        return end_ms, partial

    def seed_previous(self, q: _Query, start_ms: int) -> tuple[dict[tuple, float], str | None]:
        lookback = int(self.s.xid_seed_lookback_s)
        answer = self.ask(f"last_over_time({q.selector}[{lookback}s])", start_ms - 1)
        seeded = {}
        for series in answer.result:
            key = self.xid_key(series["metric"])
            if key is not None:
                seeded[key] = float(series["value"][1])
        return seeded, (answer.partial[0] if answer.partial else None)

    def gpu_identity(
        self, labels: dict[str, str], count: bool = True
    ) -> tuple[str, int, str | None] | None:
        """(node, physical GPU index, UUID) of a dcgm-exporter series, MIG instance series
        included (an instance belongs to its GPU); None (counted) for unnamed series."""
        node = node_of(labels, self.s.node_labels)
        gpu = labels.get("gpu")
        if node is None or gpu is None or not gpu.isdigit():
            self.unnamed_series += count
            return None
        return node, int(gpu), labels.get("UUID") or labels.get("uuid")

    def xid_key(self, labels: dict[str, str]) -> tuple | None:
        ident = self.gpu_identity(labels)
        if ident is None:
            return None
        return (*ident, labels.get("xid", ""))

    def record_partial(self, q: _Query, partial: list[tuple[int, int, str]]) -> None:
        for a, b, said in partial:
            self.report.partial.append(
                PartialChunk(q.key, _dt(a), _dt(b), said, self.allow_partial)
            )

    def land(self, q: _Query, chunk: Chunk, previous: dict) -> None:
        if not chunk.labels:
            return
        if q.kind == "gpu":
            self.land_gpu(chunk, q.key.removeprefix("gpu:"))
            return
        series = list(chunk.series())
        if q.kind in ("xid_count", "xid_last"):
            self.land_xid(q, series, previous)
        elif q.kind == "condition":
            self.land_conditions(series)
        elif q.kind == "unschedulable":
            self.land_unschedulable(series)
        else:
            self.land_node_metric(q, series)

    def land_gpu(self, chunk: Chunk, queried: str) -> None:
        """`queried` names the field when the answer has no `__name__` (`max_over_time` drops it).

        Whole-device series land in gpu_samples, MIG instance series (label `GPU_I_ID`) in
        gpu_instance_samples, so device health never reads a per-instance value."""
        idents = [self.gpu_identity(labels) for labels in chunk.labels]
        instances = [
            mig_instance(labels) if ident else None
            for ident, labels in zip(idents, chunk.labels, strict=True)
        ]
        device = np.array(
            [i is not None and m is None for i, m in zip(idents, instances, strict=True)],
            dtype=bool,
        )
        mig = np.array([m is not None for m in instances], dtype=bool)
        ids = chunk.series_ids()
        per_series = pl.DataFrame(
            {
                "cluster": [labels.get(self.s.cluster_label) or None for labels in chunk.labels],
                "node": [i[0] if i else None for i in idents],
                "gpu": [i[1] if i else None for i in idents],
                "uuid": [i[2] if i else None for i in idents],
                "gpu_i_id": [m[0] if m else None for m in instances],
                "gpu_i_profile": [m[1] if m else None for m in instances],
                "job_id": [m[2] if m else None for m in instances],
                "metric": [labels.get("__name__") or queried for labels in chunk.labels],
            },
            schema={
                "cluster": pl.String,
                "node": pl.String,
                "gpu": pl.Int16,
                "uuid": pl.String,
                "gpu_i_id": pl.Int16,
                "gpu_i_profile": pl.String,
                "job_id": pl.String,
                "metric": pl.String,
            },
        )
        # `cluster`: the series' label (an external label that Thanos and Mimir keep); NULL is resolved
        # from --cluster or the node's cluster when loaded.
        for table, wanted, columns, key in (
            (
                "gpu_samples",
                device,
                ["cluster", "ts", "node", "gpu", "uuid", "metric", "value"],
                ["ts", "cluster", "node", "gpu", "metric"],
            ),
            (
                "gpu_instance_samples",
                mig,
                [
                    "cluster",
                    "ts",
                    "node",
                    "gpu",
                    "uuid",
                    "gpu_i_id",
                    "gpu_i_profile",
                    "job_id",
                    "metric",
                    "value",
                ],
                ["ts", "cluster", "node", "gpu", "gpu_i_id", "metric"],
            ),
        ):
            keep = wanted[ids]
            if not keep.any():
                continue
            frame = pl.DataFrame({"ts": chunk.ts[keep], "value": chunk.values[keep]}).with_columns(
                pl.col("ts").cast(pl.Datetime("ms", "UTC"))
            )
            gathered = per_series[ids[keep]]  # one row per sample, in sample order
            frame = pl.concat([frame, gathered], how="horizontal").select(columns)
            series_keys = per_series.filter(pl.Series(wanted)).select(key[1:])
            if series_keys.height > series_keys.unique().height:
                # Two series for one GPU (or instance) and field (e.g. the exporter scraped by
                # two jobs): keep the first.
                frame = frame.unique(subset=key, keep="first", maintain_order=True)
            self.stage.add(table, frame)

    def land_xid(self, q: _Query, series: list, previous: dict) -> None:
        cols: dict[str, list] = {
            k: []
            for k in ("cluster", "ts", "node", "gpu", "uuid", "kind", "code", "message", "source")
        }
        for labels, ts, vs in series:
            key = self.xid_key(labels)
            if key is None:
                continue
            node, gpu, uuid, xid = key
            prev = previous.get(key)
            for t, v in zip(ts, vs, strict=True):
                if q.kind == "xid_count":
                    event = v > (prev or 0.0) and xid.isdigit()
                    code = int(xid) if xid.isdigit() else None
                else:
                    event = v != 0 and v != prev and not math.isnan(v)
                    code = None if math.isnan(v) else int(v)
                if event:
                    cols["cluster"].append(labels.get(self.s.cluster_label) or None)
                    cols["ts"].append(t)
                    cols["node"].append(node)
                    cols["gpu"].append(gpu)
                    cols["uuid"].append(uuid)
                    cols["kind"].append("xid")
                    cols["code"].append(code)
                    cols["message"].append(labels.get("err_msg") or None)
                    cols["source"].append("dcgm")
                prev = v
            previous[key] = prev
        self.stage.add("gpu_events", _frame(cols))

    def land_conditions(self, series: list) -> None:
        cols: dict[str, list] = {
            "cluster": [],
            "ts": [],
            "node": [],
            "condition": [],
            "status": [],
            "value": [],
        }
        for labels, ts, vs in series:
            node = labels.get("node") or node_of(labels, self.s.node_labels)
            if not node or not labels.get("condition"):
                self.unnamed_series += 1
                continue
            n = len(ts)
            cols["cluster"].extend([labels.get(self.s.cluster_label) or None] * n)
            cols["ts"].extend(ts)
            cols["value"].extend(vs)
            cols["node"].extend([node] * n)
            cols["condition"].extend([labels["condition"]] * n)
            cols["status"].extend([labels.get("status", "").lower()] * n)
        if not cols["ts"]:
            return
        frame = _frame(cols)
        # One-hot: the status whose series is 1 is the status; none at 1 means nobody knows.
        status = (
            frame.group_by("cluster", "ts", "node", "condition")
            .agg(pl.col("status").filter(pl.col("value") == 1).first().alias("hot"))
            .with_columns(
                pl.col("hot")
                .replace_strict(
                    {"true": "True", "false": "False", "unknown": "Unknown"}, default="Unknown"
                )
                .fill_null("Unknown")
                .alias("status"),
                pl.lit(None, pl.String).alias("reason"),
                pl.lit(None, pl.String).alias("message"),
            )
            .select("cluster", "ts", "node", "condition", "status", "reason", "message")
            .sort("node", "condition", "ts")
        )
        self.stage.add("node_conditions", status)

    def land_unschedulable(self, series: list) -> None:
        cols: dict[str, list] = {"cluster": [], "ts": [], "node": [], "condition": [], "status": []}
        for labels, ts, vs in series:
            node = labels.get("node") or node_of(labels, self.s.node_labels)
            if not node:
                self.unnamed_series += 1
                continue
            cols["cluster"].extend([labels.get(self.s.cluster_label) or None] * len(ts))
            cols["ts"].extend(ts)
            cols["node"].extend([node] * len(ts))
            cols["condition"].extend(["Unschedulable"] * len(ts))
            cols["status"].extend(["True" if v == 1 else "False" for v in vs])
        self.stage.add("node_conditions", _frame(cols))

    def land_node_metric(self, q: _Query, series: list) -> None:
        cols: dict[str, list] = {"cluster": [], "ts": [], "node": [], "value": []}
        for labels, ts, vs in series:
            node = node_of(labels, self.s.node_labels)
            if not node:
                self.unnamed_series += 1
                continue
            cols["cluster"].extend([labels.get(self.s.cluster_label) or None] * len(ts))
            cols["ts"].extend(ts)
            cols["value"].extend(vs)
            cols["node"].extend([node] * len(ts))
        if not cols["ts"]:
            return
        self.con.register("__raw", _frame(cols))
        try:
            frame = self.con.sql(
                f"SELECT cluster, ts, node, $metric AS metric, sum({q.sample_sql})::DOUBLE AS value "
                "FROM __raw GROUP BY cluster, ts, node ORDER BY cluster, node, ts",
                params={"metric": q.name},
            ).pl()
        except duckdb.Error as e:
            raise ConfigError(
                f"`prometheus.node_metrics.{q.name}.sample_sql` is not valid SQL over `value`: {e}"
            ) from e
        finally:
            self.con.unregister("__raw")
        self.stage.add("node_samples", frame)

    # -------------------------------------------------------------- node inventory

    def inventory_answer(self, promql: str, at_ms: int) -> list[dict[str, Any]]:
        answer = self.ask(promql, at_ms)
        if answer.partial:
            raise _PartialInventory(answer.partial[0])
        return answer.result

    def inventory(
        self, end_ms: int, window_ms: int
    ) -> tuple[pl.DataFrame | None, pl.DataFrame | None]:
        """(nodes, gpu_devices) as of `end_ms`, from kube-state-metrics and dcgm-exporter labels.

        A partial answer is never used (a node or GPU missing from it would change the counts):
        then both are None, and the partial chunk is recorded under the key `inventory`.
        """
        try:
            return self._inventory(end_ms, window_ms)
        except _PartialInventory as e:
            self.report.partial.append(
                PartialChunk("inventory", _dt(end_ms - window_ms), _dt(end_ms), e.warning, False)
            )
            return None, None

    def _inventory(
        self, end_ms: int, window_ms: int
    ) -> tuple[pl.DataFrame | None, pl.DataFrame | None]:
        s = self.s
        lookback = f"{max(1, min(window_ms, s.inventory_lookback_s * 1000))}ms"
        at = end_ms - 1
        kube: dict[str, dict[str, str]] = defaultdict(dict)
        for metric in ("kube_node_info", "kube_node_labels"):
            for series in self.inventory_answer(f"last_over_time({metric}[{lookback}])", at):
                labels = series["metric"]
                if labels.get("node"):
                    kube[labels["node"]].update({k: v for k, v in labels.items() if v})
        capacity = {}
        for series in self.inventory_answer(
            f'last_over_time(kube_node_status_capacity{{resource="nvidia_com_gpu"}}[{lookback}])',
            at,
        ):
            value = float(series["value"][1])
            if series["metric"].get("node") and math.isfinite(value):
                capacity[series["metric"]["node"]] = int(value)
        gpus: dict[str, dict[int, tuple]] = defaultdict(dict)
        series_cluster: dict[str, str] = {}  # a node's cluster as its DCGM series' label says
        if s.gpu_metrics:
            names = "|".join(re.escape(name) for name in s.gpu_metrics)
            probe = f'{{__name__=~"{names}"{"," + s.matchers if s.matchers else ""}}}'
            by = ", ".join(
                dict.fromkeys(
                    [
                        *s.node_labels,
                        "gpu",
                        "UUID",
                        "uuid",
                        "pci_bus_id",
                        "modelName",
                        "GPU_I_ID",
                        s.cluster_label,
                    ]
                )
            )
            query = f"group by ({by}) (last_over_time({probe}[{lookback}]))"
            for series in self.inventory_answer(query, at):
                labels = series["metric"]
                ident = self.gpu_identity(labels, count=False)
                if ident is None:
                    continue
                node, gpu, uuid = ident
                if labels.get(s.cluster_label):
                    series_cluster.setdefault(node, labels[s.cluster_label])
                gpus[node][gpu] = (
                    uuid,
                    normalise_pci_bus_id(labels.get("pci_bus_id", "")),
                    labels.get("modelName"),
                )
        nodes_rows = []
        for node in sorted(set(kube) | set(gpus)):
            labels = kube.get(node, {})
            count = _first_int(labels, s.gpu_count_labels)
            if count is None:
                count = capacity.get(node)
            if count is None and node in gpus:
                count = len(gpus[node])
            if count is None:
                self.report.warnings.append(
                    f"Node `{node}` has no GPU count (label {', '.join(s.gpu_count_labels)}, GPU capacity "
                    "or DCGM series); it was left out of `nodes`."
                )
                continue
            models = [m for _, _, m in gpus.get(node, {}).values() if m]
            model = models[0] if models else _first(labels, s.gpu_model_labels)
            instance_type = _first(labels, s.instance_type_labels)
            nic = _first_int(labels, [s.nic_expected_label]) if s.nic_expected_label else None
            if nic is None and instance_type in s.nic_expected_by_instance_type:
                nic = int(s.nic_expected_by_instance_type[instance_type])
            nodes_rows.append(
                {
                    "node": node,
                    # No label: NULL, so the loader takes the cluster the node's other series name
                    # (or its stored one); `prometheus.cluster` set to a name is the last resort.
                    "cluster": (
                        labels.get(s.cluster_label)
                        or series_cluster.get(node)
                        or self.given_cluster
                        or (s.cluster if s.cluster != "default" else None)
                    ),
                    "instance_type": instance_type,
                    "gpu_model": model,
                    "gpu_count": count,
                    "nic_expected": nic,
                }
            )
        nodes = pl.DataFrame(
            nodes_rows,
            schema={
                "node": pl.String,
                "cluster": pl.String,
                "instance_type": pl.String,
                "gpu_model": pl.String,
                "gpu_count": pl.Int64,
                "nic_expected": pl.Int64,
            },
        )
        devices = pl.DataFrame(
            [
                {"node": n, "gpu": g, "uuid": u, "pci_bus_id": p}
                for n, per_gpu in gpus.items()
                for g, (u, p, _m) in per_gpu.items()
            ],
            schema={"node": pl.String, "gpu": pl.Int64, "uuid": pl.String, "pci_bus_id": pl.String},
        )
        return (nodes if not nodes.is_empty() else None), (
            devices if not devices.is_empty() else None
        )


class _PartialInventory(Exception):
    def __init__(self, warning: str) -> None:
        super().__init__(warning)
        self.warning = warning


def _first(labels: dict[str, str], names: Iterable[str]) -> str | None:
    for name in names:
        if labels.get(name):
            return labels[name]
    return None


def _first_int(labels: dict[str, str], names: Iterable[str]) -> int | None:
    value = _first(labels, names)
    try:
        number = float(value) if value is not None else None
    except ValueError:
        return None
    return int(number) if number is not None and math.isfinite(number) else None


def _frame(cols: dict[str, list]) -> pl.DataFrame:
    frame = pl.DataFrame(cols, strict=False)
    if "cluster" in frame.columns:
        frame = frame.with_columns(pl.col("cluster").cast(pl.String))
    if "ts" in frame.columns:
        frame = frame.with_columns(pl.col("ts").cast(pl.Int64).cast(pl.Datetime("ms", "UTC")))
    return frame


def ingest_prometheus(
    con: duckdb.DuckDBPyConnection,
    url: str,
    start: datetime,
    end: datetime,
    settings: PrometheusSettings | None = None,
    *,
    insecure: bool = False,
    downsample_s: int | None = None,
    full: bool = False,
    allow_partial: bool = False,
    env: dict[str, str] | None = None,
    progress: Callable[[str], None] | None = None,
    after_chunk: Callable[[int], None] | None = None,
    cluster: str | None = None,
) -> IngestReport:
    """Fetch `[start, end)` (from each query's watermark on, unless `full`) and load it.

    One transaction: the data and the new watermarks commit together, or nothing does.
    Windows recorded as incomplete by earlier runs are fetched again first.
    A chunk the store keeps answering only in part (`report.partial`) is, without
    `allow_partial`, not loaded: its query's watermark stays at the chunk's start (the other
    queries load). With `allow_partial` what came is loaded and the window recorded in
    `ingest_incomplete` until a later run gets it complete.
    `after_chunk(n)` is called after the n-th chunk is fetched (progress, tests).
    Raises `SourceError` when the server fails or returns nothing at all.
    """
    settings = settings or PrometheusSettings()
    if end <= start:
        raise ConfigError(
            f"The end ({end:%Y-%m-%dT%H:%M:%SZ}) is not after the start ({start:%Y-%m-%dT%H:%M:%SZ}).",
            "Pass --start before --end.",
        )
    if downsample_s is not None and downsample_s <= 0:
        raise ConfigError("--downsample must be a positive number of seconds.")
    settled = datetime.now(UTC) - timedelta(seconds=settings.settle_s)
    if end > settled:
        end = settled
        if end <= start:
            raise ConfigError(
                f"The window ends within `prometheus.settle_s` ({settings.settle_s} s) of now: nothing is settled yet.",
                "Pass an earlier --start, or wait.",
            )
    began = time.perf_counter()
    client = PrometheusClient(url, settings, insecure=insecure, env=env)
    source = f"prometheus:{client.shown_url}" + (
        f":downsample={downsample_s}s" if downsample_s else ""
    )
    ensure_schema(con)
    marks = {} if full else read_watermarks(con, source)
    incomplete = read_incomplete(con, source)
    run = _Ingest(
        con, client, settings, downsample_s, progress, after_chunk, allow_partial, cluster
    )
    if insecure and urlsplit(url).scheme == "https":
        run.report.warnings.append(
            f"The TLS certificate of {client.shown_url} was not verified (--insecure)."
        )
    start_ms, end_ms = _ms(start), _ms(end)
    new_marks: dict[str, datetime] = {}
    empty_gpu_metrics: list[str] = []
    # (query key, start) of recorded windows to delete / to (re)record as incomplete.
    refilled: list[tuple[str, datetime]] = []
    still_incomplete: list[tuple[str, datetime, datetime, str]] = []
    try:
        for q in _queries(settings):
            for a, b in incomplete.get(q.key, []):
                redo = QueryReport(q.key, a, b)
                run.report.queries.append(redo)
                reached, partial = run.fetch(q, _ms(a), _ms(b), redo)
                run.record_partial(q, partial)
                if partial:
                    still_incomplete.extend((q.key, a, b, p[2]) for p in partial[:1])
                else:
                    refilled.append((q.key, a))
                del reached
            mark = marks.get(q.key)
            q_start = max(start_ms, _ms(mark)) if mark is not None else start_ms
            if q_start >= end_ms:
                continue
            qr = QueryReport(q.key, _dt(q_start), end)
            run.report.queries.append(qr)
            reached, partial = run.fetch(q, q_start, end_ms, qr)
            run.record_partial(q, partial)
            if run.allow_partial:
                still_incomplete.extend((q.key, _dt(a), _dt(b), said) for a, b, said in partial)
            if reached > q_start:
                new_marks[q.key] = _dt(reached)
            if partial:
                continue
            if qr.samples == 0 and q.kind == "gpu":
                empty_gpu_metrics.append(q.selector.split("{")[0])
            elif qr.samples == 0 and q.kind in ("node", "condition"):
                run.report.warnings.append(_empty_warning(q))
        if empty_gpu_metrics:
            run.report.warnings.append(
                f"No series in the window for {', '.join(f'`{m}`' for m in empty_gpu_metrics)}: if the GPUs "
                "have these fields, enable them in dcgm-exporter's counters file (docs/sources.md)."
            )
        nodes, devices = run.inventory(end_ms, end_ms - start_ms)
        report = run.report
        report.refilled = len(refilled)
        if run.notes:
            report.warnings.extend(f"The store said: {note}" for note in run.notes)
        if run.non_finite:
            report.warnings.append(
                f"{run.non_finite:,} samples were not finite numbers (+Inf, -Inf, NaN) and were skipped "
                "(they count as missing telemetry)."
            )
        if report.queries and report.samples_fetched == 0 and nodes is None and not report.partial:
            raise SourceError(
                f"Prometheus at {client.shown_url} returned no samples between "
                f"{start:%Y-%m-%dT%H:%M:%SZ} and {end:%Y-%m-%dT%H:%M:%SZ}.",
                "Check the time range and that dcgm-exporter and kube-state-metrics are scraped "
                "(or set `prometheus.matchers`).",
            )
        if nodes is None:
            report.warnings.append(
                "No kube-state-metrics node series (kube_node_info, kube_node_labels) and no DCGM GPUs: "
                "the `nodes` table was not updated."
            )
        if run.unnamed_series:
            report.warnings.append(
                f"{run.unnamed_series} series had no node or GPU label "
                f"(looked for {', '.join(settings.node_labels)}) and were skipped."
            )
        items = run.stage.inputs(f"prometheus {client.shown_url}")
        if nodes is not None:
            items.append(
                TableInput(
                    "nodes",
                    nodes.with_row_index(ROW_COLUMN, offset=1),
                    f"prometheus {client.shown_url}",
                )
            )

        def bookkeeping(c: duckdb.DuckDBPyConnection) -> None:
            for key, a in refilled:
                c.execute(
                    "DELETE FROM ingest_incomplete WHERE source = $source AND query_key = $key AND start_ts = $a",
                    {"source": source, "key": key, "a": a},
                )
            for key, a, b, said in still_incomplete:
                c.execute(
                    "DELETE FROM ingest_incomplete WHERE source = $source AND query_key = $key AND start_ts = $a",
                    {"source": source, "key": key, "a": a},
                )
                c.execute(
                    "INSERT INTO ingest_incomplete VALUES ($source, $key, $a, $b, $said, now())",
                    {"source": source, "key": key, "a": a, "b": b, "said": said},
                )
            if report.partial:
                # Kept with the load_log batch this transaction adds (the same id).
                c.execute(
                    "INSERT INTO ingest_partial_log SELECT coalesce(max(batch_id), 0) + 1, $source, $partial, "
                    "$loaded, $said FROM load_log",
                    {
                        "source": source,
                        "partial": len(report.partial),
                        "loaded": len(report.partial_loaded),
                        "said": report.partial[0].warning,
                    },
                )
            for key, mark in new_marks.items():
                c.execute(
                    "DELETE FROM ingest_watermarks WHERE source = $source AND query_key = $key",
                    {"source": source, "key": key},
                )
                c.execute(
                    "INSERT INTO ingest_watermarks VALUES ($source, $key, $mark)",
                    {"source": source, "key": key, "mark": mark},
                )
            if devices is not None:
                c.register("__devices", devices)
                try:
                    c.execute(
                        "DELETE FROM gpu_devices d WHERE EXISTS "
                        "(SELECT 1 FROM __devices n WHERE n.node = d.node AND n.gpu = d.gpu)"
                    )
                    c.execute(
                        "INSERT INTO gpu_devices SELECT node, gpu, uuid, pci_bus_id, $seen FROM __devices",
                        {"seen": end},
                    )
                finally:
                    c.unregister("__devices")

        report.loads = load_batch(
            con, items, source=source, in_transaction=bookkeeping, cluster=cluster
        )
        report.requests_made = client.requests_made
        report.history = client.history
        report.seconds = time.perf_counter() - began
        return report
    finally:
        run.stage.drop()
        client.close()


def partial_summary(report: IngestReport) -> tuple[str, str]:
    """(title, hint) of the one message that ends a run with partial answers."""
    said = report.partial[0].warning
    keys = list(dict.fromkeys(p.query_key for p in report.partial))
    shown = ", ".join(keys[:3]) + (f" and {len(keys) - 3} more" if len(keys) > 3 else "")
    refused, loaded = report.partial_refused, report.partial_loaded
    parts = []
    if loaded:
        parts.append(
            f"{len(loaded):,} {_were(len(loaded))} loaded as incomplete (--allow-partial) and will be "
            "fetched again"
        )
    if refused:
        parts.append(
            f"{len(refused):,} {_were(len(refused))} not loaded and will be fetched again by the next run"
        )
    title = (
        f"The store answered {count(len(report.partial), 'chunk')} only in part after the retries ({shown}): "
        f'it said "{said}". {"; ".join(parts)}.'
    )
    if refused:
        hint = (
            "Everything else was loaded. Run again when the store is healthy (the next run fetches those "
            "windows), or pass --allow-partial to load what it answers and fill it later."
        )
    else:
        hint = "The dashboard's data status and the report list the incomplete windows until a run fills them."
    return title, hint


def count(n: int, noun: str) -> str:
    """`1 chunk`, `2 chunks`."""
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def _were(n: int) -> str:
    return "was" if n == 1 else "were"


def _empty_warning(q: _Query) -> str:
    name = q.name or q.selector
    if q.kind == "node":
        return f"No samples for node metric `{name}` (`{q.selector}`): set `prometheus.node_metrics.{name}`."
    return f"No `{name}` series in the window: is kube-state-metrics scraped?"


@dataclass(frozen=True)
class PrometheusSource(Source):
    """`gpufleet ingest prometheus`: the window `[start, end)` of a Prometheus-compatible API,
    from each query's watermark on (see `ingest_prometheus`)."""

    url: str
    start: datetime
    end: datetime
    settings: PrometheusSettings = field(default_factory=PrometheusSettings)
    insecure: bool = False
    downsample_s: int | None = None
    full: bool = False
    allow_partial: bool = False
    env: dict[str, str] | None = None
    progress: Callable[[str], None] | None = None
    cluster: str | None = None
    """The ingest's `--cluster` (see `Source.cluster`)."""

    name: ClassVar[str] = "prometheus"
    reads: ClassVar[str] = (
        "a Prometheus-compatible HTTP API (Prometheus, Thanos, Mimir, VictoriaMetrics)"
    )
    tables: ClassVar[tuple[str, ...]] = (
        "gpu_samples",
        "gpu_instance_samples",
        "gpu_events",
        "node_conditions",
        "node_samples",
        "nodes",
    )
    settings_section: ClassVar[str | None] = "prometheus"

    @property
    def source_id(self) -> str:
        # As `ingest_prometheus` names its run: the URL without credentials, and the push-down step.
        downsample = f":downsample={self.downsample_s}s" if self.downsample_s else ""
        return f"prometheus:{redact_url(self.url)}{downsample}"

    def watermark(self, con: duckdb.DuckDBPyConnection) -> datetime | None:
        try:
            marks = read_watermarks(con, self.source_id)
        except duckdb.CatalogException:  # no ingest has created the bookkeeping tables yet
            return None
        return min(marks.values()) if marks else None

    def ingest(self, con: duckdb.DuckDBPyConnection) -> SourceReport:
        report = ingest_prometheus(
            con,
            self.url,
            self.start,
            self.end,
            self.settings,
            insecure=self.insecure,
            downsample_s=self.downsample_s,
            full=self.full,
            allow_partial=self.allow_partial,
            env=self.env,
            progress=self.progress,
            cluster=self.cluster,
        )
        return SourceReport(
            self.source_id, report.loads, warnings=list(report.warnings), detail=report
        )
