"""The report stage on hand-built pipeline results: matrix, JUnit XML, JSON, Markdown, HTML, timelines."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import yaml

from mqconform.reports.api import CheckResult, PipelineResult, RunInfo
from mqconform.reports.pipeline import BadHistory, check_runs
from mqconform.reports.render.html import write_html
from mqconform.reports.render.jsonout import SCHEMA, SCHEMA_KEYS, report_dict
from mqconform.reports.render.junit import junit_xml
from mqconform.reports.render.markdown import markdown_summary
from mqconform.reports.render.matrix import STATES, Implementation, Matrix, build_matrix
from mqconform.reports.render.timeline import build_timeline, render_svg
from mqconform.spec import load_catalogue

CATALOGUE = load_catalogue()
ORDER = [rule.id for rule in CATALOGUE]
RING_SCENARIO = [  # ring-size 1: m1 delivered, m2 sent, m1 nacked back to the head of a full queue
    {"queue": {"name": "q", "ring_size": 1}},
    {"consumer": {"name": "c", "queue": "q", "window_bytes": 0}},
    {"send": {"to": "q", "id": "m1", "size": 100}},
    {"receive": "c"},
    {"send": {"to": "q", "id": "m2", "size": 100}},
    {"nack": {"consumer": "c", "id": "m1"}},
]


def outcome(rule: str, state: str, cx: str | None = None, message: str | None = None) -> dict[str, object]:
    return {"v": 1, "rule": rule, "machine": rule.split("-")[0].lower(), "outcome": state,
            "counterexample": cx, "message": message}


def run_info(run: str, adapter: str, started: str, *outcomes: dict[str, object], path: str = "/nowhere",
             profile: str = "artemis") -> RunInfo:
    return RunInfo(run=run, adapter=adapter, profile=profile, path=path, status="complete", started=started,
                   exit_code=0, outcomes=tuple(outcomes))


def write_run(root: Path, run: str, adapter: str, started: str, records: list[dict[str, object]],
              scenarios: dict[str, tuple[str, list[dict[str, Any]]]] | None = None) -> Path:
    """A run directory as `mqconform run` writes it (run.json, outcomes.jsonl, counterexamples/)."""
    path = root / run
    (path / "counterexamples").mkdir(parents=True)
    meta = {"v": 1, "run": run, "adapter": adapter, "profile": "artemis", "started": started,
            "status": "complete", "exit_code": 0, "versions": {"python": "3"}}
    (path / "run.json").write_text(json.dumps(meta))
    lines = [json.dumps({**r, "run": run, "adapter": adapter, "profile": "artemis"}) for r in records]
    (path / "outcomes.jsonl").write_text("\n".join(lines) + "\n")
    for stem, (header, steps) in (scenarios or {}).items():
        body = yaml.safe_dump({"profile": "artemis", "steps": steps}, sort_keys=False)
        (path / "counterexamples" / f"{stem}.yaml").write_text(header + body)
    return path


@pytest.fixture
def mixed() -> Matrix:
    """Two implementations; `alpha` has three runs given out of chronological order."""
    runs = (
        run_info("a3", "alpha", "2026-01-03T00:00:00Z", outcome("DELIVERY-1", "pass"),
                 outcome("DELIVERY-2", "fail", "counterexamples/d2-late.yaml", "late"),
                 outcome("DELIVERY-3", "fail", "counterexamples/d3-late.yaml", "again"),
                 outcome("RING-1", "not_applicable"), outcome("RING-2", "unknown", message="timeout"),
                 outcome("RING-3", "deviation", message="known")),
        run_info("a1", "alpha", "2026-01-01T00:00:00Z", outcome("DELIVERY-1", "pass"),
                 outcome("DELIVERY-2", "pass"),
                 outcome("DELIVERY-3", "fail", "counterexamples/d3-first.yaml", "first"),
                 outcome("RING-1", "not_applicable"), outcome("RING-2", "pass"),
                 outcome("RING-3", "deviation")),
        run_info("a2", "alpha", "2026-01-02T00:00:00Z", outcome("DELIVERY-1", "pass"),
                 outcome("DELIVERY-2", "fail", "counterexamples/d2-first.yaml", "first d2")),
        run_info("b1", "beta", "2026-01-01T00:00:00Z", outcome("DELIVERY-1", "pass"),
                 outcome("DELIVERY-2", "pass"), outcome("NOSUCH-1", "fail", None, "x | y")),
    )
    return build_matrix(PipelineResult(runs, ()), ORDER)


ALPHA = Implementation("alpha", "artemis")
BETA = Implementation("beta", "artemis")


@pytest.mark.rules("DELIVERY-1")
def test_matrix_states_flaky_and_first_failing_run(mixed: Matrix) -> None:
    assert mixed.implementations == (ALPHA, BETA)
    state = {r: mixed.cell(r, ALPHA).state for r in mixed.rules}
    assert state == {"DELIVERY-1": "pass", "DELIVERY-2": "flaky", "DELIVERY-3": "fail",
                     "RING-1": "not_applicable", "RING-2": "unknown", "RING-3": "deviation",
                     "NOSUCH-1": "not_run"}
    flaky = mixed.cell("DELIVERY-2", ALPHA)
    assert flaky.first_failing is not None and flaky.first_failing.run == "a2"
    assert flaky.first_failing.counterexample == "counterexamples/d2-first.yaml"
    assert mixed.cell("DELIVERY-3", ALPHA).first_failing.run == "a1"  # type: ignore[union-attr]
    assert [r.run for r in mixed.cell("DELIVERY-1", ALPHA).runs] == ["a1", "a2", "a3"]
    assert mixed.cell("RING-1", BETA).state == "not_run"
    assert mixed.cell("NOSUCH-1", BETA).state == "fail"
    assert mixed.rules[-1] == "NOSUCH-1"  # ids outside the catalogue come last
    assert mixed.failing
    counts = mixed.counts()
    assert sum(counts.values()) == len(mixed.rules) * 2 and counts["flaky"] == 1


@pytest.mark.rules("DELIVERY-1")
def test_history_check_failure_overrides_a_passing_outcome() -> None:
    run = run_info("r", "alpha", "2026-01-01", outcome("DELIVERY-1", "pass"), outcome("DELIVERY-2", "pass"))
    check = CheckResult("r", "alpha", "artemis", "delivery", "q", "total_queue", ("DELIVERY-1",), "fail",
                        count=2, detail="2 messages lost")
    passing = CheckResult("r", "alpha", "artemis", "delivery", "q", "order", ("DELIVERY-2",), "pass")
    matrix = build_matrix(PipelineResult((run,), (check, passing)), ORDER)
    cell = matrix.cell("DELIVERY-1", ALPHA)
    assert cell.state == "fail" and "2 messages lost" in cell.runs[0].message
    assert cell.runs[0].source == "check total_queue"
    assert matrix.cell("DELIVERY-2", ALPHA).state == "pass"


def test_all_passing_matrix_is_not_failing() -> None:
    run = run_info("r", "alpha", "2026-01-01", outcome("DELIVERY-1", "pass"), outcome("RING-1", "unknown"))
    matrix = build_matrix(PipelineResult((run,), ()), ORDER)
    assert not matrix.failing and matrix.cell("RING-1", ALPHA).state == "unknown"


def test_junit_has_one_testcase_per_rule_and_implementation(mixed: Matrix) -> None:
    root = ET.fromstring(junit_xml(mixed, CATALOGUE).split("\n", 1)[1])
    cases = root.findall("./testsuite/testcase")
    assert len(cases) == len(mixed.rules) * len(mixed.implementations)
    seen = set()
    for case in cases:
        props = {p.get("name"): p.get("value") for p in case.findall("./properties/property")}
        assert props["rule"] in mixed.rules and case.get("name", "").startswith(props["rule"])
        seen.add((props["rule"], props["implementation"]))
        kind = {"fail": "failure", "flaky": "failure", "unknown": "error", "not_applicable": "skipped",
                "deviation": "skipped", "not_run": "skipped"}.get(props["state"] or "")
        assert (case.find(kind) is not None) if kind else not list(case.iter("failure"))
    assert len(seen) == len(cases)
    flaky = next(c for c in cases if c.find("./properties/property[@value='DELIVERY-2']") is not None
                 and "alpha" in c.get("classname", ""))
    props = {p.get("name"): p.get("value") for p in flaky.findall("./properties/property")}
    assert props["first_failing_run"] == "a2" and props["counterexample"].endswith("d2-first.yaml")
    assert root.get("failures") == str(sum(c.find("failure") is not None for c in cases))


def test_json_follows_the_schema(mixed: Matrix) -> None:
    doc = json.loads(json.dumps(report_dict(mixed, CATALOGUE)))
    assert set(doc) == set(SCHEMA_KEYS) and doc["schema"] == SCHEMA and doc["failing"] is True
    assert set(doc["summary"]) == set(STATES)
    assert len(doc["cells"]) == len(doc["rules"]) * len(doc["implementations"])
    for cell in doc["cells"]:
        assert cell["state"] in STATES and isinstance(cell["runs"], list)
    flaky = next(c for c in doc["cells"]
                 if c["rule"] == "DELIVERY-2" and c["implementation"].startswith("alpha"))
    assert flaky["state"] == "flaky" and flaky["first_failing_run"] == "a2"
    rules = {r["id"]: r for r in doc["rules"]}
    assert rules["DELIVERY-1"]["statement"] == CATALOGUE["DELIVERY-1"].statement
    assert rules["NOSUCH-1"]["in_catalogue"] is False
    assert [i["runs"] for i in doc["implementations"]] == [["a1", "a2", "a3"], ["b1"]]


def test_markdown_summary_lists_failures_and_escapes(mixed: Matrix) -> None:
    text = markdown_summary(mixed)
    assert text.startswith("## mqconform compliance: ❌")
    row = next(line for line in text.splitlines() if line.startswith("| DELIVERY-2 | alpha"))
    assert "FLAKY" in row and "| a2 |" in row and "d2-first.yaml" in row
    assert "x \\| y" in text  # a pipe in a message does not break the table
    assert "<details>" in text and text.count("| RING-1 |") == 1
    only = run_info("r", "a", "1", outcome("DELIVERY-1", "pass"))
    passing = build_matrix(PipelineResult((only,), ()), ORDER)
    assert markdown_summary(passing).startswith("## mqconform compliance: ✅ no failing rule")


@pytest.mark.rules("RING-3", "RING-7")
def test_timeline_shows_steps_and_model_events() -> None:
    timeline = build_timeline("rabbitmq-classic", RING_SCENARIO)  # drop-head: the returned head goes
    assert timeline.problem == "" and timeline.lanes == ("q", "c")
    kinds = [(m.step, m.lane, m.kind, m.text) for m in timeline.marks]
    assert (3, "q", "sent", "sent m1") in kinds
    assert (4, "c", "delivered", "delivered m1") in kinds
    assert (6, "c", "returned", "returned m1") in kinds
    replaced = [m for m in timeline.marks if m.kind == "replaced"]
    assert len(replaced) == 1 and replaced[0].by_model and replaced[0].text.startswith("replaced m1")
    svg = render_svg(timeline, failing_step=6)
    assert svg.startswith("<svg") and svg.count("<rect") >= len(timeline.marks)


@pytest.mark.rules("REDELIVERY-8")
def test_timeline_close_returns_what_the_consumer_held() -> None:
    steps = [*RING_SCENARIO[:4], {"close": "c"}]
    timeline = build_timeline("artemis", steps)
    assert any(m.step == 5 and m.kind == "returned" and m.text == "returned m1" for m in timeline.marks)


def test_timeline_of_a_broken_scenario_says_why() -> None:
    timeline = build_timeline("artemis", [*RING_SCENARIO[:2], {"frobnicate": 1}])
    assert "frobnicate" in timeline.problem and len(timeline.marks) == 2
    assert "cannot build the model" in build_timeline("nosuch", RING_SCENARIO).problem


def test_html_escapes_every_string_from_a_run(tmp_path: Path) -> None:
    evil_id = "<img src=x onerror=alert(1)>"
    evil_msg = "<script>alert('msg')</script>"
    steps = [{"queue": {"name": "q<b>"}}, {"send": {"to": "q<b>", "id": evil_id, "size": 10}}]
    header = f"# Counterexample: send_result (DELIVERY-2)\n# {evil_msg}\n"
    run = write_run(tmp_path / "runs", "r<i>1", "ad<script>x</script>", "2026-01-01",
                    [outcome("DELIVERY-2", "fail", "counterexamples/cx1.yaml", evil_msg),
                     outcome(evil_id, "fail", None, evil_msg)],
                    {"cx1": (header, steps), "other": (header, steps)})
    matrix = build_matrix(check_runs([run]), ORDER)
    write_html(matrix, CATALOGUE, tmp_path / "report")
    pages = sorted((tmp_path / "report").rglob("*.html"))
    assert len(pages) >= 5  # index, two rule pages, two counterexample pages
    text = "\n".join(p.read_text() for p in pages)
    for raw in (evil_id, evil_msg, "<script>x</script>", "<b>", "<i>"):
        assert raw not in text
    assert "&lt;img src=x onerror=alert(1)&gt;" in text and "&lt;script&gt;alert(&#x27;msg&#x27;)" in text
    cx = next(p for p in pages if p.parent.name == "cx" and "cx1" in p.name).read_text()
    assert "sent &lt;img src=x" in cx and "<svg" in cx


def test_loader_reads_run_directories_and_rejects_bad_ones(tmp_path: Path) -> None:
    good = write_run(tmp_path, "g", "alpha", "1", [outcome("DELIVERY-1", "pass")])
    broken = write_run(tmp_path, "b", "alpha", "2", [outcome("DELIVERY-1", "pass")])
    (broken / "outcomes.jsonl").write_text('{"v": 1, "rule": "DELIVERY-1", "outcome": "pass"}\n{not json\n')
    with pytest.raises(BadHistory, match=r"outcomes.jsonl:2"):
        check_runs([good, broken])
    result = check_runs([good, broken], ignore_bad=True)
    assert {r.run for r in result.runs} == {"g", "b"} and [b.line for b in result.bad] == [2]
