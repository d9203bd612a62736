"""The output door (issue 35 part 4, docs/output-door.md): whatever a hostile repository writes
into a script, a value or a file name, no line `gen` prints is read by a CI runner as a command,
holds a raw control character or line separator, or breaks a machine format. One test per attack
class, each building its own project in tmp_path and running every command and format over it."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from generator.cli import app
from generator.base.safe_text import json_text, markup, one_line, payload_problem, printable

FIX = Path(__file__).resolve().parent / "fixtures" / "fix"
VERSION = "0.7.0"

# What no printed line may hold: C0 but newline and tab, DEL, C1, separators, bidi, lone surrogates.
_RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
                  "\ud800-\udfff]")
_ANNOTATION = re.compile(r"::(error|warning|notice) ")
FORGED = "::error file=forged.py,line=1::forged annotation"

SEPARATORS = {"U+2028": "\u2028", "U+2029": "\u2029", "NEL": "\x85", "FF": "\x0c", "VT": "\x0b", "CR": "\r"}
RUNNER = ["##[error]forged", "##[set-env name=X;]1", "##vso[task.setvariable variable=x]1", "x ##[group]y"]
TERMINAL = ["\x1b[2J\x1b[H", "\x1b]0;title\x07", "\x9b31m", "\x1bP+q\x1b\\", "\u202eevil"]


def assert_inert(data: bytes, *, annotations: bool = False) -> str:
    """`data` is UTF-8 and no line of it is a runner command or holds a raw control; with
    `annotations`, every non-empty line is one of ours (`::error file=...`) and none is forged."""
    text = data.decode("utf-8")  # strict: a lone surrogate or a raw byte fails here
    for line in text.split("\n"):
        assert not _RAW.search(line), repr(line)
        assert "##[" not in line.lower() and "##vso[" not in line.lower(), line
        if annotations and line:
            assert _ANNOTATION.match(line), line
            properties = line.split("::")[1]
            assert "forged" not in properties, line
        else:
            assert not line.lstrip().startswith("::"), line
    return text


def _project(tmp_path: Path, payloads: list[str], name: str = "run.sh") -> Path:
    """A git project with one fixable script (VB101/VB107 on line 15) whose next-door lines carry
    each payload: in a value, in a comment, and in a variable, all inside the fix's diff context."""
    (tmp_path / ".git").mkdir(exist_ok=True)
    source = (FIX / "micro_literal.sh").read_text()
    values = "".join(f"    trainer.project_name='p{n}{payload}' \\\n" for n, payload in enumerate(payloads))
    source = source.replace("    data.max_response_length=1024 \\\n",
                            "    data.max_response_length=1024 \\\n" + values)
    comments = "".join(f"# {payload}\nNOTE{n}='{payload}'\n" for n, payload in enumerate(payloads))
    source = source.replace("set -xeuo pipefail\n", "set -xeuo pipefail\n" + comments)
    script = tmp_path / name
    script.write_bytes(source.encode("utf-8"))
    return script


def _gen(*args: str, stdin: str | None = None):
    return CliRunner().invoke(app, list(args), input=stdin, env={"NO_COLOR": "1"})


# Every command and format that prints text derived from the script.
RUNS = [
    ("check", "-f", "text"), ("check", "-f", "concise"), ("check", "-f", "json"), ("check", "-f", "sarif"),
    ("check", "-f", "github"), ("check", "--statistics"),
    ("show",), ("show", "--format", "json"), ("show", "--format", "yaml"),
    ("explain",), ("explain", "--format", "json"),
    ("fix",),
]


def _migratable(script: Path, payloads: list[str]) -> Path:
    """Beside `script`: a verl 0.4.1 script `gen migrate --to 0.7.0` rewrites, next to the payloads."""
    source = (FIX / "gc_041.sh").read_text()
    values = "".join(f"    trainer.project_name='p{n}{payload}' \\\n" for n, payload in enumerate(payloads))
    source = source.replace("    data.train_batch_size=64 \\\n", "    data.train_batch_size=64 \\\n" + values)
    target = script.with_name("old_" + script.name)
    target.write_bytes(source.encode("utf-8"))
    return target


def _every_output(script: Path, payloads: list[str]) -> list[tuple[tuple[str, ...], int]]:
    """Runs every entry of RUNS on `script`, `gen diff` against the fixture it came from and `gen
    migrate` on a 0.4.1 script with the same payloads, asserting each output inert; returns (run,
    exit code)."""
    done = []
    old = _migratable(script, payloads)
    for run in [*RUNS, ("diff",), ("diff", "--format", "json"), ("migrate", "--to", VERSION, "--from", "0.4.1")]:
        args = [*run, str(script)] if run[0] != "diff" else [*run, str(FIX / "micro_literal.sh"), str(script)]
        if run[0] == "migrate":
            args = [*run, str(old)]
        if run[0] in ("check", "explain", "fix", "diff"):
            args += ["--verl-version", VERSION]
        result = _gen(*args)
        assert result.exception is None or isinstance(result.exception, SystemExit), (run, result.exception)
        assert result.exit_code in (0, 1, 2), (run, result.exit_code)
        assert_inert(result.stdout_bytes, annotations=run[-1] == "github")
        assert_inert(result.stderr_bytes)
        if run[-1] in ("json", "sarif"):
            json.loads(result.stdout_bytes)
        done.append((run, result.exit_code))
    return done


@pytest.mark.parametrize("separator", list(SEPARATORS))
def test_a_line_separator_in_a_value_forges_no_annotation_in_any_output(tmp_path, separator):
    payloads = [f"a{SEPARATORS[separator]}{FORGED}"]
    script = _project(tmp_path, payloads)
    _every_output(script, payloads)
    # The code frame under VB101 is the finding's own line: lines are counted at newlines only.
    text = _gen("check", "--verl-version", VERSION, "--select", "VB101", str(script)).stdout
    assert re.search(r"\n +\d+ \|     actor_rollout_ref\.actor\.ppo_micro_batch_size_per_gpu=6 \\\n", text), text


def test_runner_commands_in_values_and_comments_are_echoed_defused(tmp_path):
    payloads = RUNNER + [" ::warning::indented", "::notice::first"]
    script = _project(tmp_path, payloads)
    _every_output(script, payloads)
    shown = _gen("show", str(script)).stdout
    assert "##\\x5berror]forged" in shown  # shown, escaped, not dropped


def test_terminal_escapes_never_reach_a_piped_output(tmp_path):
    script = _project(tmp_path, TERMINAL)
    _every_output(script, TERMINAL)
    assert "\\x1b[2J" in _gen("show", str(script)).stdout


def test_a_diff_that_would_need_escaping_is_withheld_whole_and_the_others_still_apply(tmp_path):
    hostile = _project(tmp_path, [f"a\u2028{FORGED}"], name="hostile.sh")
    clean = _project(tmp_path, ["plain"], name="clean.sh")
    result = _gen("fix", "--verl-version", VERSION, str(hostile), str(clean))
    assert result.exit_code == 1  # fixes pending, as for any dry run
    assert f"{hostile}: the diff not printed (its line" in result.stderr and "U+2028" in result.stderr
    assert "--- " + str(clean) in result.stdout and str(hostile) not in result.stdout
    if shutil.which("patch") is None:
        pytest.skip("no patch(1) here")
    before = clean.read_bytes()
    applied = subprocess.run(["patch", "-p0", "--dry-run"], input=result.stdout_bytes, cwd="/", capture_output=True,
                             timeout=10, check=False)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert clean.read_bytes() == before


def test_fix_stdin_keeps_a_hostile_script_back_with_exit_2(tmp_path):
    script = _project(tmp_path, ["\x1b[2J"])
    result = _gen("fix", "--verl-version", VERSION, "-", stdin=script.read_text())
    assert result.exit_code == 2
    assert result.stdout == ""
    assert "the fixed script not printed" in result.stderr
    clean = _project(tmp_path, ["plain"], name="clean.sh")
    ok = _gen("fix", "--verl-version", VERSION, "-", stdin=clean.read_text())
    assert ok.exit_code == 0 and ok.stdout.startswith("#!/usr/bin/env bash")


def test_a_diff_splits_lines_where_bash_does(tmp_path):
    """U+2028, FF and VT inside a line are not line breaks for bash or patch: the hunk's line
    numbers count newlines only (str.splitlines once shifted them)."""
    from generator.fix.engine import FixResult, unified_diff

    before = "a\u2028b\nc\x0cd\ne\n".encode()
    after = "a\u2028b\nc\x0cd\nE\n".encode()
    diff = unified_diff(FixResult("x.sh", before, after), "x.sh")
    assert "@@ -1,3 +1,3 @@" in diff
    assert payload_problem(diff) == "line 4 holds U+2028"


# --- names that are not UTF-8 ------------------------------------------------------------------


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    """The real command line: stdout is a real byte stream, as in CI."""
    env = dict(os.environ, NO_COLOR="1", PYTHONIOENCODING="utf-8", LC_ALL="C.UTF-8")
    return subprocess.run([sys.executable, "-m", "generator", *args], cwd=cwd, capture_output=True, timeout=60,
                          env=env, check=False)


def _two_files(tmp_path: Path) -> None:
    script = _project(tmp_path, ["plain"])
    os.rename(script, os.path.join(os.fsencode(tmp_path), b"r\xffn.sh"))
    _project(tmp_path, ["plain"])


@pytest.mark.skipif(sys.platform == "darwin", reason="macOS refuses names that are not UTF-8")
@pytest.mark.parametrize("fmt", ["sarif", "json"])
def test_a_name_that_is_not_utf8_is_encoded_and_every_file_is_reported(tmp_path, fmt):
    _two_files(tmp_path)
    done = _cli("check", "-f", fmt, "--verl-version", VERSION, ".", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert b"Traceback" not in done.stderr
    text = assert_inert(done.stdout)
    assert "\\udc" not in text  # no lone surrogate escape: strict JSON readers refuse them
    document = json.loads(text)
    if fmt == "sarif":
        uris = {location["physicalLocation"]["artifactLocation"]["uri"]
                for result in document["runs"][0]["results"] for location in result["locations"]}
        assert uris == {"run.sh", "r%FFn.sh"}  # the bytes themselves, percent-encoded
    else:
        assert {f["path"] for f in document["files"]} == {"run.sh", "r\\xffn.sh"}


@pytest.mark.skipif(sys.platform == "darwin", reason="macOS refuses names that are not UTF-8")
@pytest.mark.parametrize("fmt", ["text", "github"])
def test_a_name_that_is_not_utf8_is_escaped_in_text_and_annotations(tmp_path, fmt):
    _two_files(tmp_path)
    done = _cli("check", "-f", fmt, "--verl-version", VERSION, ".", cwd=tmp_path)
    assert done.returncode == 1 and b"Traceback" not in done.stderr
    text = assert_inert(done.stdout, annotations=fmt == "github")
    assert "r\\xffn.sh" in text and "run.sh" in text


# --- the door itself -----------------------------------------------------------------------------


def test_the_door_escapes_each_class():
    assert printable("a\u2028b") == "a\\u2028b"
    assert printable("\x85\x0c\x0b\r\x1b\x9b") == "\\x85\\x0c\\x0b\\x0d\\x1b\\x9b"
    assert printable("::error::x\n  ::warning::y\nz ::ok") == "\\x3a:error::x\n  \\x3a:warning::y\nz ::ok"
    assert printable("a ##[error]b ##VSO[x]") == "a ##\\x5berror]b ##VSO\\x5bx]"
    assert printable("r\udcffn") == "r\\xffn"
    assert one_line("a\nb\tc") == "a\\nb\\tc"
    # invisible: two names that look alike must not print alike (issue 35's red-team round)
    assert printable("run\u200b.sh \ufeffx \u00ad \u2060") == "run\\u200b.sh \\ufeffx \\xad \\u2060"


def test_a_diff_keeps_the_scripts_invisible_characters():
    """A zero-width space in a script is the script's byte: the diff that removes it still prints."""
    assert payload_problem("-a\u200bb=1\n+ab=1\n") is None
    assert payload_problem("-a\u202eb=1\n") == "line 1 holds U+202E"


def test_json_text_keeps_the_data_and_escapes_the_text():
    value = "a\u2028b ##[error]c \x1b \u202e \x85"
    text = json_text({"v": value})
    assert json.loads(text) == {"v": value}
    assert_inert(text.encode())
    assert json.loads(json_text({"p": "r\udcffn"})) == {"p": "r\\xffn"}
    assert json.loads(json_text({"p": "é →"}, ascii_only=False)) == {"p": "é →"}


def test_a_trailing_backslash_prints_once_through_rich_markup():
    from rich.console import Console

    from generator.base.safe_text import styled

    console = Console(force_terminal=False, width=200)
    with console.capture() as captured:
        console.print(markup("    data.x=1 \\") + "\n" + styled("bold", markup("path\\")) + ": " + markup("[red]x"))
    assert captured.get() == "    data.x=1 \\\npath\\: [red]x\n"


_TEXT = st.text(st.characters(codec=None, exclude_categories=()), max_size=60) | st.lists(
    st.sampled_from(["::", "##[", "##vso[", "\n", " ", "\u2028", "\x1b", "\udcff", "\r", "a", "#", ":", "["]),
    max_size=20).map("".join)


@settings(max_examples=300, deadline=None)
@given(_TEXT)
def test_any_text_through_the_door_is_inert_and_the_door_is_idempotent(text):
    out = printable(text)
    assert printable(out) == out
    assert_inert(out.encode("utf-8"))
    assert "\n" not in one_line(text)
    assert payload_problem(text) is None or printable(text) != text
    document = json_text({"k": text})
    assert_inert(document.encode("ascii"))
    if not re.search("[\ud800-\udfff]", text):
        assert json.loads(document) == {"k": text}


# --- a terminal (issue 36: one backslash; colour output through the door too) ---------------------


def _in_a_terminal(*args: str, cwd: Path) -> str:
    """`gen ARGS` with stdout and stderr on a pseudo-terminal (colour on, as a person sees it);
    the text with rich's colour codes (SGR) and the terminal's CR before each newline removed."""
    pty = pytest.importorskip("pty")
    master, slave = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    env.update(TERM="xterm-256color", COLUMNS="200")
    child = subprocess.Popen([sys.executable, "-m", "generator", *args], stdout=slave, stderr=slave,
                             stdin=subprocess.DEVNULL, cwd=cwd, env=env)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child closed its side
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    assert child.wait(timeout=60) in (0, 1, 2)
    text = b"".join(chunks).decode("utf-8")
    assert "\x1b[" in text, "expected colour on a terminal"
    return re.sub(r"\x1b\[[0-9;]*m", "", text).replace("\r\n", "\n")


def test_a_terminal_shows_one_continuation_backslash_and_nothing_raw(tmp_path):
    payloads = [f"a\u2028{FORGED}", "##[error]forged", "\x1b[2J", "tail \\"]
    script = _project(tmp_path, payloads)
    text = _in_a_terminal("check", "--verl-version", VERSION, script.name, cwd=tmp_path)
    frames = [line for line in text.splitlines() if re.match(r"\s*\d+ \| ", line)]
    assert any(line.endswith("=6 \\") for line in frames), frames  # the finding's own line, one backslash
    assert not any(line.endswith("\\\\") for line in frames), frames
    assert_inert(text.encode())
    shown = _in_a_terminal("show", script.name, cwd=tmp_path)
    assert_inert(shown.encode())
    assert re.search(r"trainer\.project_name=p3tail \\  \[literal\]", shown), shown  # one backslash


def test_only_the_door_writes_to_stdout_or_stderr():
    """No module but generator/base/safe_text.py calls print, typer/click echo or sys.stdout/stderr
    .write: every other writer goes through `write`, `say` or `write_payload` (a module that
    prints to a stream it was handed passes `printable` text, or rich markup made with `markup`)."""
    import ast

    root = Path(__file__).resolve().parent.parent / "generator"
    offenders = []
    for path in sorted(root.rglob("*.py")):
        if path.name == "safe_text.py" and path.parent == root / "base":
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            if isinstance(func, ast.Name) and func.id == "print":
                offenders.append(f"{path.relative_to(root)}:{node.lineno} print")
            elif isinstance(func, ast.Attribute) and func.attr in ("echo", "secho"):
                offenders.append(f"{path.relative_to(root)}:{node.lineno} {func.attr}")
            elif (isinstance(func, ast.Attribute) and func.attr in ("write", "writelines")
                  and isinstance(func.value, ast.Attribute) and func.value.attr in ("stdout", "stderr")):
                offenders.append(f"{path.relative_to(root)}:{node.lineno} sys.{func.value.attr}.{func.attr}")
    assert offenders == []


def test_html_text_escapes_markup_and_what_a_reader_would_not_see():
    from generator.base.safe_text import html_text

    text = html_text('</script><img src=x onerror="a()">\u202eevil\x1b[2J\u200b')
    assert "<" not in text and '"' not in text
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]", text), text
    assert "\\u202e" in text and "\\x1b" in text
    assert html_text("Qwen2.5-7B & co") == "Qwen2.5-7B &amp; co"  # plain text unchanged but the markup


def test_only_the_door_escapes_html():
    """Every HTML page (charts, the recipe catalog) escapes user text through safe_text.html_text:
    html.escape alone lets a bidi override or a raw ESC from a recipe or model name into the page
    (issue 35's red-team round)."""
    import ast

    root = Path(__file__).resolve().parent.parent / "generator"
    offenders = []
    for path in sorted(root.rglob("*.py")):
        if path.name == "safe_text.py" and path.parent == root / "base":
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.module == "html":
                offenders.append(f"{path.relative_to(root)}:{node.lineno} from html import")
            elif isinstance(node, ast.Import) and any(alias.name == "html" for alias in node.names):
                offenders.append(f"{path.relative_to(root)}:{node.lineno} import html")
    assert offenders == []
