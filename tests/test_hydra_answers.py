"""Hydra's answers kept between runs (generator.base.cache.RememberedAnswers, used by
generator.reading.overrides for the texts its fast path leaves to Hydra): a kept answer is Hydra's own,
a later process needs no Hydra for it, and an entry that cannot be trusted is not used."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from generator.base import cache
from generator.reading import overrides

# Texts the fast path leaves to Hydra, of each kind Hydra answers: a grammar error, a nested
# list, a mapping, quoted text with `$`, a choice sweep (an error of ours with its choices). Eight:
# a process writes the entry at its 1st, 2nd, 4th and 8th new answer, so all eight are kept.
SLOW_TEXTS = ["actor_rollout_ref.model.path=<your_model>", "a.b=[[1,2],[3]]", "a.b={x: 1, y: [true, null]}",
              'trainer.logger=["console", "wandb:.*x.y$"]', "a.b=1,2", "a.b='${oc.env:HOME}'", "a.b=x}",
              "a.c=[1,[2,[3]]]"]


@pytest.fixture(autouse=True)
def fresh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.delenv(cache.SWITCH_ENV, raising=False)
    overrides._hydra_answers.cache_clear()
    overrides._parse_override_slow.cache_clear()
    yield
    overrides._hydra_answers.cache_clear()
    overrides._parse_override_slow.cache_clear()


def _entry(tmp_path: Path) -> Path:
    found = [p for p in (tmp_path / "cache" / "data").glob("*.json") if "answers" in json.loads(p.read_text())]
    assert len(found) == 1
    return found[0]


def _again() -> None:
    """As a new process: the kept entry is read anew, nothing of this process's answers is reused."""
    overrides._hydra_answers.cache_clear()
    overrides._parse_override_slow.cache_clear()


def test_a_kept_answer_is_hydras_own(tmp_path: Path) -> None:
    for text in SLOW_TEXTS:
        assert overrides.parse_override_fast(text) is None  # each really goes to Hydra
    first = [overrides._parse_override_slow(t) for t in SLOW_TEXTS]
    assert first == [overrides.parse_override_hydra(t) for t in SLOW_TEXTS]
    assert set(json.loads(_entry(tmp_path).read_text())["answers"]) == set(SLOW_TEXTS)
    _again()
    kept = overrides._hydra_answers()
    assert kept is not None and all(kept.get(t) is not None for t in SLOW_TEXTS)
    again = [overrides._parse_override_slow(t) for t in SLOW_TEXTS]
    assert again == first
    assert [type(p.value) for p in again] == [type(p.value) for p in first]
    assert again[2].value == {"x": 1, "y": [True, None]} and type(again[2].value["x"]) is int


def test_a_kept_list_is_not_shared_with_the_entry(tmp_path: Path) -> None:
    overrides._parse_override_slow("a.b=[[1,2],[3]]")
    _again()
    value = overrides._parse_override_slow("a.b=[[1,2],[3]]").value
    value.append("changed by its owner")
    answers = overrides._hydra_answers()
    assert answers is not None and answers.get("a.b=[[1,2],[3]]")[3] == [[1, 2], [3]]


def test_what_is_written_is_what_hydra_answered(tmp_path: Path) -> None:
    # The entry is written again at a later new answer: an owner's change to an earlier value
    # in the meantime is not what Hydra said, and is not written.
    overrides._parse_override_slow("a.b=x}")
    overrides._parse_override_slow("a.b=[[1,2],[3]]").value.append("changed by its owner")
    overrides._parse_override_slow("c.d=x}")
    overrides._parse_override_slow("e.f=x}")  # the 4th new answer: the entry is written again
    assert json.loads(_entry(tmp_path).read_text())["answers"]["a.b=[[1,2],[3]]"][3] == [[1, 2], [3]]


@pytest.mark.parametrize("forged", [b"{", b"[]", b'{"key": "other", "answers": {}}', b"\xff\xfe",
                                    "answers-of-wrong-shape"])
def test_a_corrupt_or_forged_entry_is_not_used(tmp_path: Path, forged: bytes | str) -> None:
    text = "actor_rollout_ref.model.path=<your_model>"
    expected = overrides.parse_override_hydra(text)
    overrides._parse_override_slow(text)
    entry = _entry(tmp_path)
    if forged == "answers-of-wrong-shape":
        document = json.loads(entry.read_text())
        document["answers"][text] = ["k", "=", "<your_model>", None, 7, None]  # an error that is not text
        entry.write_text(json.dumps(document))
    else:
        entry.write_bytes(forged)  # type: ignore[arg-type]
    _again()
    assert overrides._parse_override_slow(text) == expected


def test_an_answer_about_another_text_is_not_used(tmp_path: Path) -> None:
    overrides._parse_override_slow("a.b=x}")
    entry = _entry(tmp_path)
    document = json.loads(entry.read_text())
    document["answers"]["c.d=x}"] = document["answers"]["a.b=x}"]  # value_text would be the other text's
    entry.write_text(json.dumps(document))
    _again()
    assert overrides._parse_override_slow("c.d=x}") == overrides.parse_override_hydra("c.d=x}")


def test_an_entry_others_may_write_is_not_trusted(tmp_path: Path) -> None:
    text = "a.b=x}"
    overrides._parse_override_slow(text)
    entry = _entry(tmp_path)
    document = json.loads(entry.read_text())
    document["answers"][text][4] = "forged"
    entry.write_text(json.dumps(document))
    os.chmod(entry, 0o666)
    _again()
    assert overrides._parse_override_slow(text).error != "forged"


def test_answers_are_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cache, "MAX_ANSWERS", 3)
    for n in range(8):
        overrides._parse_override_slow(f"a.b{n}=x}}")
    assert len(json.loads(_entry(tmp_path).read_text())["answers"]) == 2  # written at 1 and 2; 4 and 8 too many
    overrides._parse_override_slow("a.long=" + "x" * cache.MAX_QUESTION + "}")
    assert len(json.loads(_entry(tmp_path).read_text())["answers"]) == 2


def test_thousands_of_new_answers_write_the_entry_a_few_times(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A hostile script's 3,000 odd overrides: once per answer, the writes grew with the square
    # of the count (14 s for 3,000); at doubling counts they add up to about twice the entry.
    writes: list[int] = []
    real_write = cache._write_json

    def counted(target: Path, document: dict[str, object], check: object) -> None:
        writes.append(len(document["answers"]))  # type: ignore[arg-type]
        real_write(target, document, check)  # type: ignore[arg-type]

    monkeypatch.setattr(cache, "_write_json", counted)
    for n in range(3000):
        overrides._parse_override_slow(f"a.k{n}=<x{n}>")
    assert writes == [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048]
    assert len(json.loads(_entry(tmp_path).read_text())["answers"]) == 2048


def test_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(cache.SWITCH_ENV, "1")
    assert overrides._parse_override_slow("a.b=x}") == overrides.parse_override_hydra("a.b=x}")
    assert not (tmp_path / "cache").exists()


def test_two_processes_keep_each_others_answers(tmp_path: Path) -> None:
    answers = overrides._hydra_answers()  # a process that read the entry before the other wrote
    assert answers is not None
    overrides._hydra_answers.cache_clear()
    overrides._parse_override_slow("a.b=x}")  # the other process
    answers.add("c.d=[[1]]", list(overrides.parse_override_hydra("c.d=[[1]]")))
    assert set(json.loads(_entry(tmp_path).read_text())["answers"]) == {"a.b=x}", "c.d=[[1]]"}


def test_a_second_check_needs_no_hydra(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    script = tmp_path / "run.sh"
    script.write_text("python3 -m verl.trainer.main_ppo 'actor_rollout_ref.model.path=<your_model>' "
                      "'trainer.logger=[\"console\", \"wandb:.*x.y$\"]' data.train_batch_size=8\n")
    code = ("import sys\nsys.argv = ['gen', 'check', '--format', 'concise', sys.argv[1]]\n"
            "from generator.cli import main\ntry:\n    main()\nexcept SystemExit:\n    pass\n"
            "print('hydra' in sys.modules, file=sys.stderr)")
    env = {**os.environ, cache.CACHE_ENV: str(tmp_path / "cache")}
    runs = [subprocess.run([sys.executable, "-c", code, str(script)], capture_output=True, text=True, env=env,
                           timeout=120) for _ in range(2)]
    assert "VK606" in runs[0].stdout and "token recognition error" in runs[0].stdout
    assert runs[1].stdout == runs[0].stdout
    assert [r.stderr.strip().splitlines()[-1] for r in runs] == ["True", "False"]
