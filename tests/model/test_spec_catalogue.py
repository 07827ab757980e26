"""The bundled spec catalogue: it loads, covers every area and every number of the seeds, and its
loader reports each kind of mistake as ``<file>:<line>: <problem>``."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from mqconform.spec import AREAS, PROFILES, Catalogue, Rule, SpecError, load_catalogue

#: Every number SEEDS.md states (S0-S4), written out: each must appear in some rule's statement or params.
SEED_NUMBERS = (
    # S0 VOS: drained messages, blocks used, last message number, truncate conditions (1)-(4)
    400000, 520201, 51689380, 1, 2, 3, 4,
    # S1 MDB throttle: high 2 / low 1, counts 3 -> 2 -> 1, 2·WT, high = 1, 3 servants x 6 threads,
    # 2 CPUs, N = 32, max sessions 100
    2, 1, 3, 6, 32, 100,
    # S2 fast failure: 10 ms period, 200 ms send, 5 s pull, 31 s heartbeat, 3 s transaction, ~210 ms,
    # lock held > 1 s, capacity 10,000, one send thread
    10, 200, 5, 31, 3, 210, 1000, 5000, 31000, 3000, 10000,
    # S3 paging: max-size-bytes default -1, page-size-bytes 10 MiB, shipped default blocks at 10 MiB
    -1, 10485760,
    # S4 ring: ring-size 3, 4 messages, consumerWindowSize 1024·1024
    1024, 1048576,
)
#: The S4 scheduling scenario's clock times and messageCount/scheduledCount pairs.
SEED_TEXTS = ("12:00", "12:01", "12:02", "12:03", "12:05", "1/1", "2/1", "3/1", "4/1")
#: Names the seeds use, which the statements must use verbatim.
SEED_NAMES = (
    "_record_index", "e$max_file_exceeded", "s$truncate_queue", "e$no_truncate_queue",
    "e$invalid_io_operation", "list_messages", "MDB.THROTTLE.THRESHOLD.LOW.EQUALS.HIGH", "WLM",
    "SYSTEM_BUSY", "[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: Nms, "
    "size of queue: M", "[PCBUSY_CLEAN_QUEUE]", "waitTimeMillsInSendQueue", "sendMessageThreadPoolNums",
    "brokerFastFailureEnable", "max-size-bytes", "page-size-bytes", "address-full-policy", "ack-batch-size",
    "data/paging", "messageCount", "deliveringCount", "scheduledCount", "consumerWindowSize", "ring-size",
)

FILES = ("delivery", "ring", "redelivery", "scheduling", "paging", "throttle", "admission", "storage",
         "restart", "expiry", "retention", "lastvalue")


@pytest.fixture(scope="module")
def catalogue() -> Catalogue:
    return load_catalogue()


def _text(rule: Rule) -> str:
    params = " ".join(f"{key}={value}" for key, value in rule.params.items())
    return re.sub(r"(?<=\d),(?=\d{3})", "", f"{rule.statement} {params}")  # 520,201 -> 520201


def test_bundled_catalogue_loads_with_every_area(catalogue: Catalogue) -> None:
    assert len(catalogue) >= 60
    assert catalogue.areas == tuple(AREAS)
    for area, prefix in AREAS.items():
        rules = catalogue.by_area(area)
        assert rules, area
        assert all(rule.id.startswith(prefix + "-") for rule in rules)
    package = Path(__import__("mqconform.spec", fromlist=["x"]).__file__ or "").parent
    assert sorted(p.stem for p in package.glob("*.yaml")) == sorted(FILES)


def test_fixed_id_scheme(catalogue: Catalogue) -> None:
    """The model and tests cite these ids: RING-1..12 = R1..R12, PAGING-1..16 = P1..P16, and so on; each
    is an Artemis rule whose source is the Artemis code, tests or manual."""
    for prefix, count in (("RING", 12), ("PAGING", 16), ("REDELIVERY", 11), ("SCHED", 8)):
        for n in range(1, count + 1):
            rule = catalogue[f"{prefix}-{n}"]
            assert "github.com/apache/activemq-artemis/" in rule.source, (rule.id, rule.source)
    assert "S4" in catalogue["RING-13"].source and "S4" in catalogue["SCHED-14"].source
    assert "12:05" in catalogue["SCHED-14"].statement
    assert "slow queue" in catalogue["PAGING-17"].statement
    assert catalogue["PAGING-19"].profiles == {"hornetq"}
    # ids are numbered without gaps inside each area, in file order
    for area, prefix in AREAS.items():
        numbers = [int(rule.id.split("-")[1]) for rule in catalogue.by_area(area)]
        assert numbers == list(range(1, len(numbers) + 1)), prefix


def test_every_seed_number_appears(catalogue: Catalogue) -> None:
    text = "\n".join(_text(rule) for rule in catalogue)
    missing = [n for n in SEED_NUMBERS if not re.search(rf"(?<![\d.]){re.escape(str(n))}(?![\d])", text)]
    assert not missing, f"seed numbers in no rule: {missing}"
    assert not [t for t in SEED_TEXTS if t not in text]
    assert not [name for name in SEED_NAMES if name not in text]


def test_rule_fields(catalogue: Catalogue) -> None:
    for rule in catalogue:
        assert rule.kind in ("safety", "liveness", "counter")
        assert rule.profiles and rule.profiles <= set(PROFILES)
        assert rule.statement and rule.source and rule.location.endswith(tuple("0123456789"))
        assert rule.id in catalogue and rule in catalogue
    assert "NOPE-1" not in catalogue
    assert {rule.id for rule in catalogue.for_profile("jetstream")} >= {"RING-18", "DELIVERY-1"}
    assert "RING-18" not in {rule.id for rule in catalogue.for_profile("artemis")}
    assert catalogue["DELIVERY-1"].profiles == frozenset(PROFILES)  # profiles: all
    assert catalogue["THROTTLE-1"].profiles == {"artemis", "hornetq"}  # the seeds' own components
    with pytest.raises(ValueError, match="unknown profile"):
        catalogue.for_profile("kafka")
    assert hash(catalogue["RING-3"]) == hash(load_catalogue()["RING-3"])


#: The repository root: a path a source cites (``docs/seeds/seed-004.md``, ``spec/examples/...``)
#: is relative to it.
ROOT = Path(__file__).resolve().parents[2]
_URL = re.compile(r"https?://[^\s)>\]\"']+")
#: What RFC 3986 allows in a URL (percent-escapes included), nothing else.
_URL_CHARS = re.compile(r"^[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=%]+$")
#: A repository-relative path: it starts at one of the repository's top-level directories.
_LOCAL_PATH = re.compile(
    r"(?<![\w/.-])((?:spec|docs|tests|mqconform|reference_model|adapters|scripts)/[\w./-]*)")
#: A bare file name (no directory): it must name a file somewhere in the repository.
_BARE_NAME = re.compile(r"(?<![\w/.-])([\w.-]+\.(?:md|ya?ml|py|txt))\b")


def _urls(source: str) -> list[str]:
    return [url.rstrip(".,;:") for url in _URL.findall(source)]


def test_every_source_opens(catalogue: Catalogue) -> None:
    """A rule's source is something a user can open: every http(s) URL is well formed, every cited
    ``*.md`` file and every repository path exists in the repository (no notes kept elsewhere), and
    seeds are cited with the English text shipped under docs/seeds/."""
    names = {path.name for path in ROOT.rglob("*") if not {".git", ".venv"} & set(path.parts)}
    problems = []
    for rule in catalogue:
        for url in _urls(rule.source):
            parts = urlsplit(url)
            if not (parts.scheme in ("http", "https") and "." in parts.netloc and _URL_CHARS.match(url)):
                problems.append(f"{rule.id}: malformed URL {url}")
            elif parts.netloc == "github.com" and "/blob/" in parts.path:
                owner_repo, _, ref_path = parts.path.strip("/").partition("/blob/")
                if owner_repo.count("/") != 1 or "/" not in ref_path.strip("/"):
                    problems.append(f"{rule.id}: GitHub URL without owner/repo/blob/ref/path: {url}")
            if "..." in url or "\u2026" in url:
                problems.append(f"{rule.id}: elided URL {url}")
        text = _URL.sub(" ", rule.source)
        for path in (match.rstrip(".,;:") for match in _LOCAL_PATH.findall(text)):
            if not (ROOT / path).exists():
                problems.append(f"{rule.id}: {path} is not in the repository")
        for name in _BARE_NAME.findall(text):
            if name not in names:
                problems.append(f"{rule.id}: {name} is not in the repository")
        for seed, _ in re.findall(r"\bseed (\d{3}) \((S\d)", text):
            if f"docs/seeds/seed-{seed}.md" not in text:
                problems.append(f"{rule.id}: seed {seed} is cited without docs/seeds/seed-{seed}.md")
    assert not problems, "\n".join(problems)


def test_every_example_source_opens() -> None:
    """The `# source:` line of each spec/examples/ case cites only what a user can open: every file or
    repository path it names exists here (the rules it lists carry the upstream links)."""
    names = {path.name for path in ROOT.rglob("*") if not {".git", ".venv"} & set(path.parts)}
    problems = []
    for example in sorted((ROOT / "spec" / "examples").rglob("*.yaml")):
        lines = example.read_text(encoding="utf-8").splitlines()
        source = next((line for line in lines[:3] if line.startswith("# source:")), "")
        text = _URL.sub(" ", source)
        missing = [path.rstrip(".,;:") for path in _LOCAL_PATH.findall(text)
                   if not (ROOT / path.rstrip(".,;:")).exists()]
        missing += [name for name in _BARE_NAME.findall(text) if name not in names]
        problems += [f"{example.name}: {name} is not in the repository" for name in missing]
    assert not problems, "\n".join(problems)


def test_source_check_catches_what_a_user_cannot_open(tmp_path: Path) -> None:
    """The check above fails on a note kept outside the repository, a missing path and a broken URL."""
    bad = (
        ('"artemis-semantics.md R1"', "artemis-semantics.md is not in the repository"),
        ('"docs/seeds/seed-009.md"', "docs/seeds/seed-009.md is not in the repository"),
        ('"see https://exa mple.org"', "malformed URL"),
        ('"seed 004 (S4)"', "seed 004 is cited without docs/seeds/seed-004.md"),
        ('"https://github.com/apache/activemq-artemis/blob/2.40.0"', "GitHub URL without"),
    )
    for source, problem in bad:
        (tmp_path / "ring.yaml").write_text(GOOD.replace("AREA", "ring").replace("ID", "RING-2")
                                            .replace('"seed 004 (S4)"', source))
        with pytest.raises(AssertionError, match=re.escape(problem)):
            test_every_source_opens(load_catalogue(tmp_path))
    (tmp_path / "ring.yaml").write_text(GOOD.replace("AREA", "ring").replace("ID", "RING-2").replace(
        '"seed 004 (S4)"', '"seed 004 (S4) docs/seeds/seed-004.md; QueueImpl#enforceRing (https://github.com/'
        'apache/activemq-artemis/blob/2.40.0/artemis-server/src/main/java/org/apache/activemq/artemis/core/'
        'server/impl/QueueImpl.java)"'))
    test_every_source_opens(load_catalogue(tmp_path))


def test_ambiguities_name_their_model_option(catalogue: Catalogue) -> None:
    crossing = catalogue["THROTTLE-3"]
    assert crossing.params["dispatch_crossing"] == "before_block"
    assert "dispatch_crossing=after_release" in crossing.notes
    assert "block_rule=ge" in catalogue["THROTTLE-15"].notes


def test_directory_order_and_default(tmp_path: Path) -> None:
    (tmp_path / "ring.yaml").write_text(GOOD.replace("AREA", "ring").replace("ID", "RING-2"))
    (tmp_path / "delivery.yaml").write_text(GOOD.replace("AREA", "delivery").replace("ID", "DELIVERY-7"))
    loaded = load_catalogue(tmp_path)
    assert [rule.id for rule in loaded] == ["DELIVERY-7", "RING-2"]
    rule = loaded["RING-2"]
    assert rule.area == "ring" and rule.params == {"n": 3} and rule.notes == ""
    assert rule.location == "ring.yaml:4"
    with pytest.raises(TypeError):
        rule.params["n"] = 4  # type: ignore[index]


GOOD = """\
area: AREA
title: A title
rules:
  - id: ID
    statement: One sentence.
    kind: safety
    source: "seed 004 (S4)"
    profiles: [artemis]
    params: {n: 3}
"""


@pytest.mark.parametrize(
    ("text", "line", "problem"),
    [
        (GOOD.replace("    params:", "    colour: red\n    params:"), 9, "unknown key 'colour' in rule"),
        (GOOD.replace("title: A title\n", "title: A title\nowner: me\n"), 3, "unknown key 'owner' in file"),
        (GOOD.replace("    kind: safety\n", ""), 4, "missing key 'kind' in rule"),
        (GOOD.replace("title: A title\n", ""), 1, "missing key 'title' in file"),
        (GOOD.replace("ID", "PAGING-1"), 4, "id PAGING-1 does not match area 'ring' (expected RING-<n>)"),
        (GOOD.replace("ID", "RING-0"), 4, "malformed id 'RING-0'"),
        (GOOD.replace("[artemis]", "[artemis, kafka]"), 8, "unknown profile 'kafka'"),
        (GOOD.replace("[artemis]", "[]"), 8, "empty profiles"),
        (GOOD.replace("[artemis]", "some"), 8, "profiles must be a list of profile names or 'all'"),
        (GOOD.replace("kind: safety", "kind: nice"), 6, "unknown kind 'nice'"),
        (GOOD.replace("One sentence.", '""'), 5, "empty statement"),
        (GOOD.replace("statement: One sentence.", "statement:"), 5, "empty statement"),
        (GOOD.replace("{n: 3}", "[3]"), 9, "params must be a mapping"),
        (GOOD.replace("area: AREA", "area: weather"), 1, "unknown area 'weather'"),
        (GOOD.replace("    profiles:", "    kind: liveness\n    profiles:"), 8, "duplicate key 'kind'"),
        # the parser notices the unclosed flow list on the next line
        (GOOD.replace("  - id: ID", "  - id: ID\n    statement: [open"), 6, "malformed YAML: expected ','"),
        (GOOD.replace("    params:", "    evidenced_by: [ring.receive.id, weather.x]\n    params:"), 9,
         "evidenced_by names <area>.<check>"),
        (GOOD.replace("    params:", "    evidenced_by: [ring]\n    params:"), 9, "evidenced_by names"),
        (GOOD.replace("    params:", "    evidenced_by: []\n    params:"), 9, "non-empty list"),
        (GOOD.replace("    params:", "    evidenced_by: [ring.a, ring.a]\n    params:"), 9,
         "duplicate check 'ring.a'"),
        ("area: ring\ntitle: t\nrules: []\n", 3, "rules must be a non-empty list"),
        ("", 1, "empty file"),
        ("- just\n- a list\n", 1, "file must be a mapping"),
    ],
)
def test_validation_errors_name_file_and_line(tmp_path: Path, text: str, line: int, problem: str) -> None:
    (tmp_path / "ring.yaml").write_text(text.replace("AREA", "ring").replace("ID", "RING-3"))
    with pytest.raises(SpecError) as caught:
        load_catalogue(tmp_path)
    message = str(caught.value)
    assert message.startswith(f"ring.yaml:{line}: "), message
    assert problem in message, message


def test_duplicate_id_across_files(tmp_path: Path) -> None:
    (tmp_path / "ring.yaml").write_text(GOOD.replace("AREA", "ring").replace("ID", "RING-3"))
    second = GOOD.replace("AREA", "ring").replace("ID", "RING-3").replace("A title", "Again")
    (tmp_path / "scheduling.yaml").write_text("# a comment line first\n" + second)
    expected = r"^scheduling\.yaml:5: duplicate id RING-3 \(first at ring\.yaml:4\)"
    with pytest.raises(SpecError, match=expected):
        load_catalogue(tmp_path)


def test_duplicate_id_in_one_file(tmp_path: Path) -> None:
    rule = GOOD.split("rules:\n")[1].replace("ID", "RING-3")
    (tmp_path / "ring.yaml").write_text(GOOD.replace("AREA", "ring").replace("ID", "RING-3") + rule)
    with pytest.raises(SpecError, match=r"^ring\.yaml:10: duplicate id RING-3 \(first at ring\.yaml:4\)"):
        load_catalogue(tmp_path)


def test_empty_directory(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match=r"no \*\.yaml rule files"):
        load_catalogue(tmp_path)


def test_a_rule_evidenced_by_a_check_is_among_that_checks_rules(catalogue: Catalogue) -> None:
    """A broker-profile rule the spec says an existing check evidences (``evidenced_by``) is reported
    by that check in its area: adding such a rule touches the spec and the model only."""
    from mqconform.conformance.judging.rules import TABLES

    named = [(rule.id, name) for rule in catalogue for name in rule.evidenced_by]
    assert ("REDELIVERY-42", "redelivery.receive.id") in named
    for rule_id, name in named:
        area, _, check = name.partition(".")
        assert rule_id in TABLES[area][check], (rule_id, name)
