"""The one input reader and the one atomic writer (generator/base/files.py); each test makes its own input."""

from __future__ import annotations

import io
import os
import signal
import stat
import subprocess
import sys
import textwrap

import pytest

from generator.base import files as files_mod
from generator.base.errors import InputError
from generator.base.files import keep_final_newline, read_input, read_text_input, write_atomic

# --- read_input ------------------------------------------------------------------------------


def test_reads_a_regular_file(tmp_path):
    path = tmp_path / "run.sh"
    path.write_bytes(b"python3 -m verl.trainer.main_ppo\n")
    assert read_input(path) == b"python3 -m verl.trainer.main_ppo\n"


def test_dash_reads_stdin_up_to_the_limit():
    assert read_input("-", stdin=io.BytesIO(b"abc")) == b"abc"
    with pytest.raises(InputError, match="too large"):
        read_input("-", limit=2, stdin=io.BytesIO(b"abc"))


def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "pipe.sh"
    os.mkfifo(fifo)
    # Opening a FIFO for reading with no writer blocks forever; the refusal must come first.
    # Run in a child with a timeout so a regression fails instead of hanging the suite.
    code = textwrap.dedent(f"""
        from generator.base.files import read_input
        from generator.base.errors import InputError
        try:
            read_input({str(fifo)!r})
        except InputError as err:
            print(err)
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=20)
    assert done.stdout.strip() == "is a FIFO (named pipe), not a regular file"


def test_a_device_is_refused_before_reading():
    with pytest.raises(InputError, match="is a device"):
        read_input("/dev/zero")


def test_a_directory_is_refused(tmp_path):
    with pytest.raises(InputError, match="^is a directory$"):
        read_input(tmp_path)


def test_missing_file_and_bad_name(tmp_path):
    with pytest.raises(InputError, match="^no such file$"):
        read_input(tmp_path / "nope.sh")
    with pytest.raises(InputError, match="file name too long"):
        read_input(tmp_path / ("x" * 300))
    with pytest.raises(InputError, match="not a valid file name"):
        read_input("a\0b")


def test_size_cap_is_checked_before_reading(tmp_path, monkeypatch):
    path = tmp_path / "big.sh"
    with open(path, "wb") as handle:  # sparse: 64 MiB of size, no data blocks
        handle.truncate(64 * 1024 * 1024)

    def no_open(*args, **kwargs):
        raise AssertionError("opened a file over the size cap")

    monkeypatch.setattr(files_mod.os, "open", no_open)
    with pytest.raises(InputError) as err:
        read_input(path, limit=8 * 1024 * 1024)
    assert str(err.value) == "64.0 MB is too large for a launch script (limit 8 MB)"


def test_read_text_input_refuses_non_utf8(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_bytes(b"a: 1\nb: \xff\n")
    with pytest.raises(InputError, match=r"not valid UTF-8 text \(line 2\)"):
        read_text_input(path)


# --- keep_final_newline ------------------------------------------------------------------------


def test_keep_final_newline():
    assert keep_final_newline(b"x=1\n", b"x=2") == b"x=2\n"
    assert keep_final_newline(b"x=1", b"x=2\n") == b"x=2"
    assert keep_final_newline(b"", b"x=2\n") == b"x=2\n"


# --- write_atomic ------------------------------------------------------------------------------


def test_replaces_content_and_keeps_mode(tmp_path):
    path = tmp_path / "run.sh"
    path.write_bytes(b"echo old\n")
    path.chmod(0o750)
    write_atomic(path, b"echo new\n")
    assert path.read_bytes() == b"echo new\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o750
    assert [p.name for p in tmp_path.iterdir()] == ["run.sh"]  # no temp file left behind


def test_new_file_gets_the_mode_less_the_umask(tmp_path):
    old = os.umask(0o027)
    try:
        write_atomic(tmp_path / "run.sh", "echo\n", mode=0o777)
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "run.sh").stat().st_mode) == 0o750


def test_refuses_to_write_through_a_symlink(tmp_path):
    """Issue 21: a link's target (a dotfile elsewhere) must never be replaced."""
    real = tmp_path / "real.sh"
    real.write_bytes(b"a\n")
    link = tmp_path / "link.sh"
    link.symlink_to(real)
    with pytest.raises(InputError, match="is a symbolic link; nothing written"):
        write_atomic(link, b"b\n")
    assert link.is_symlink() and real.read_bytes() == b"a\n"


@pytest.mark.skipif(os.geteuid() != 0, reason="changing a file's owner needs root")
def test_keeps_owner_and_group(tmp_path):
    path = tmp_path / "run.sh"
    path.write_bytes(b"old\n")
    os.chown(path, 65534, 65534)
    write_atomic(path, b"new\n", expected=b"old\n")
    st = path.stat()
    assert (st.st_uid, st.st_gid) == (65534, 65534) and path.read_bytes() == b"new\n"


def test_refuses_a_file_changed_since_it_was_read(tmp_path):
    path = tmp_path / "run.sh"
    path.write_bytes(b"edited by someone else\n")
    with pytest.raises(InputError, match="changed since it was read"):
        write_atomic(path, b"our fix\n", expected=b"what we read\n")
    assert path.read_bytes() == b"edited by someone else\n"


def test_refuses_to_split_hard_links(tmp_path):
    path = tmp_path / "run.sh"
    path.write_bytes(b"x\n")
    os.link(path, tmp_path / "other-name.sh")
    with pytest.raises(InputError, match="2 hard links"):
        write_atomic(path, b"y\n")
    assert (tmp_path / "other-name.sh").read_bytes() == b"x\n"


@pytest.mark.parametrize("kind", ["fifo", "device", "directory"])
def test_refuses_non_regular_targets(tmp_path, kind):
    if kind == "fifo":
        target = tmp_path / "out.sh"
        os.mkfifo(target)
    elif kind == "device":
        target = tmp_path / "null-link"
        target.symlink_to("/dev/null")
    else:
        target = tmp_path / "sub"
        target.mkdir()
    with pytest.raises(InputError) as err:
        write_atomic(target, b"x\n")
    assert "nothing written" in str(err.value) and "\n" not in str(err.value)
    if kind == "fifo":
        assert stat.S_ISFIFO(os.lstat(target).st_mode)
    if kind == "device":
        assert target.is_symlink() and stat.S_ISCHR(os.stat(target).st_mode)


@pytest.mark.parametrize("name", [".", "/", "sub/", ".."])
def test_directory_names_are_refused(tmp_path, monkeypatch, name):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    with pytest.raises(InputError, match="is a directory"):
        write_atomic(name, b"x\n")


def test_a_300_character_name_is_one_line(tmp_path):
    with pytest.raises(InputError) as err:
        write_atomic(tmp_path / ("r" * 300 + ".sh"), b"x\n")
    assert "too long" in str(err.value).lower() and "\n" not in str(err.value)
    assert list(tmp_path.iterdir()) == []


def test_replace_false_refuses_an_existing_file(tmp_path):
    path = tmp_path / "run.sh"
    path.write_bytes(b"mine\n")
    with pytest.raises(InputError, match="exists; pass --force"):
        write_atomic(path, b"x\n", replace=False)
    assert path.read_bytes() == b"mine\n"


def test_interrupted_write_leaves_the_original_intact(tmp_path, monkeypatch):
    path = tmp_path / "run.sh"
    path.write_bytes(b"original\n")

    def crash(fd):
        raise OSError(5, "Input/output error")

    # Fail after the temporary file was written, just before it would replace the original.
    monkeypatch.setattr(files_mod.os, "fsync", crash)
    with pytest.raises(InputError) as err:
        write_atomic(path, b"half-written new content\n")
    assert "original kept" in str(err.value) and "\n" not in str(err.value)
    assert path.read_bytes() == b"original\n"
    assert [p.name for p in tmp_path.iterdir()] == ["run.sh"]


def test_a_full_disk_is_one_line_and_nothing_is_left(tmp_path, monkeypatch):
    path = tmp_path / "run.sh"
    path.write_bytes(b"original\n")
    monkeypatch.setattr(files_mod.os, "replace", lambda *a, **k: (_ for _ in ()).throw(OSError(28, "No space left")))
    with pytest.raises(InputError, match="No space left"):
        write_atomic(path, b"new\n")
    assert path.read_bytes() == b"original\n"
    assert len(list(tmp_path.iterdir())) == 1


def test_sigterm_during_the_write_removes_the_temp_file(tmp_path, monkeypatch):
    path = tmp_path / "run.sh"
    path.write_bytes(b"original\n")
    real_fsync = os.fsync

    def signal_then_sync(fd):
        os.kill(os.getpid(), signal.SIGTERM)  # delivered to our handler, which raises
        real_fsync(fd)

    monkeypatch.setattr(files_mod.os, "fsync", signal_then_sync)
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(SystemExit) as stop:
        write_atomic(path, b"new\n")
    assert stop.value.code == 128 + signal.SIGTERM
    assert path.read_bytes() == b"original\n"
    assert [p.name for p in tmp_path.iterdir()] == ["run.sh"]
    assert signal.getsignal(signal.SIGTERM) is before


def test_read_only_file_is_refused_with_one_line(tmp_path):
    path = tmp_path / "run.sh"
    path.write_bytes(b"x\n")
    path.chmod(0o444)
    with pytest.raises(InputError) as err:
        write_atomic(path, b"y\n")
    assert "read-only" in str(err.value) and "\n" not in str(err.value)
    assert path.read_bytes() == b"x\n"


def test_read_only_directory_is_refused(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    path = folder / "run.sh"
    path.write_bytes(b"x\n")
    folder.chmod(0o555)
    try:
        with pytest.raises(InputError) as err:
            write_atomic(path, b"y\n")
        assert "read-only" in str(err.value)
        assert path.read_bytes() == b"x\n"
    finally:
        folder.chmod(0o755)


def test_a_missing_file_that_was_read_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        write_atomic(tmp_path / "nope.sh", b"x", expected=b"y")


def test_missing_directory(tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        write_atomic(tmp_path / "no" / "run.sh", b"x")
