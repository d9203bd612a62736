"""The project's one door to the file system: `read_input` for everything it reads from the
user, `write_atomic` for everything it writes.

Reading: only regular files (and stdin as `-`). A FIFO, device, socket or directory is refused
from its `stat` before it is opened, so `gen check /dev/zero` or a FIFO never blocks or grows;
the size cap is checked before reading and again while reading (a file may grow in between).

Writing: a temporary file in the target's directory, flushed, given the original's mode, owner
and group, then renamed over the target (all or nothing). Refused with one line, nothing
written: a target that is not a regular file (FIFO, device, directory), a read-only file or
directory, a file with several hard links (replacing it would silently split them: the other
names would keep the old text), a file whose contents changed since the caller read it, an
owner or group that cannot be kept, a symbolic link (writing through it would replace a file
elsewhere: `--chart report.html` linked to a dotfile turned the dotfile into HTML, issue 21). An
existing file is replaced only when the caller says so (`--force`; `gen fix` edits in place).
With `expected`, the file is compared again just before the rename (content, size and mtime),
so an edit another program made while the new text was being written is not lost. Extended
attributes (ACLs among them) are copied to the new file where the platform allows. The
temporary file is removed on any failure, including SIGTERM/SIGHUP/SIGINT arriving during the
write.

Errors are InputError with one line. Reader messages leave out the path (callers print it
beside the message); writer messages start with it.
"""

from __future__ import annotations

import errno
import os
import stat
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO, Iterator

from generator import boundary
from generator.errors import InputError

MIB = 1024 * 1024
# A launch script or a Python launcher: the largest of the 585 corpus scripts is 14 KB. 1 MiB
# (75 times that) keeps `gen check` under 500 MB on the costliest shape of input at the cap
# (bench/check_memory.py measures it; 8 MiB of assignments needed 546 MB).
SCRIPT_LIMIT = 1 * MIB
# A YAML config, recipe or HF config.json: real ones are kilobytes.
DATA_LIMIT = 4 * MIB
# More trainer calls than any real launcher has (loops are unrolled to at most 16 items): each
# call is composed and checked, so thousands of calls would cost minutes and gigabytes. The
# reader stops at the first call past it, for every command alike.
MAX_TRAINER_CALLS = 256

STDIN = "-"


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "is a directory"
    if stat.S_ISFIFO(mode):
        return "is a FIFO (named pipe), not a regular file"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "is a device, not a regular file"
    if stat.S_ISSOCK(mode):
        return "is a socket, not a regular file"
    return "not a regular file"


def _os_message(err: OSError) -> str:
    if err.errno == errno.ENOENT:
        return "no such file"
    if err.errno == errno.EACCES:
        return "permission denied"
    if err.errno == errno.ENAMETOOLONG:
        return "file name too long"
    if err.errno == errno.ENOTDIR:
        return "a part of the path is not a directory"
    return f"cannot read: {err.strerror or err}"


def _too_large(size: int, limit: int, what: str) -> InputError:
    return InputError(f"{size / MIB:.1f} MB is too large for a {what} (limit {limit / MIB:g} MB)")


def _read_bounded(handle: BinaryIO, limit: int, what: str) -> bytes:
    data = handle.read(limit + 1)
    if len(data) > limit:
        raise InputError(f"too large for a {what} (limit {limit / MIB:g} MB)")
    return data


def read_input(path: str | os.PathLike[str], *, limit: int = SCRIPT_LIMIT, what: str = "launch script",
               stdin: BinaryIO | None = None, trusted: bool = False) -> bytes:
    """The bytes of a user's file, at most `limit` of them; `-` reads standard input.

    InputError (one line, without the path) for a missing file, a directory, a FIFO or device
    (refused without opening it), a file over `limit`, or a read failure. While a script is
    being judged, a path outside its project is refused unread (generator.boundary.OutsideProject);
    `trusted` is for paths the user named, not the script."""
    name = os.fspath(path)
    if name == STDIN:
        source = stdin if stdin is not None else getattr(sys.stdin, "buffer", None)
        if source is None:  # started with stdin closed (`gen check - <&-`)
            raise InputError("standard input is closed")
        try:
            return _read_bounded(source, limit, what)
        except (OSError, ValueError) as err:
            raise InputError(f"cannot read standard input ({getattr(err, 'strerror', None) or err})") from None
    if not trusted:
        boundary.check(name)
    try:
        before = os.stat(name)
    except OSError as err:
        raise InputError(_os_message(err)) from None
    except ValueError:  # a NUL byte in the name
        raise InputError("not a valid file name") from None
    if not stat.S_ISREG(before.st_mode):
        raise InputError(_kind(before.st_mode))
    if before.st_size > limit:
        raise _too_large(before.st_size, limit, what)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(name, flags)
    except OSError as err:
        raise InputError(_os_message(err)) from None
    with os.fdopen(fd, "rb") as handle:
        opened = os.fstat(handle.fileno())
        if not stat.S_ISREG(opened.st_mode):  # swapped for something else between stat and open
            raise InputError(_kind(opened.st_mode))
        try:
            return _read_bounded(handle, limit, what)
        except OSError as err:
            raise InputError(_os_message(err)) from None


def read_text_input(path: str | os.PathLike[str], *, limit: int = DATA_LIMIT, what: str = "file",
                    trusted: bool = False) -> str:
    """`read_input` decoded as UTF-8; InputError when it is not UTF-8 text."""
    data = read_input(path, limit=limit, what=what, trusted=trusted)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise InputError(f"not valid UTF-8 text (line {line})") from None


def keep_final_newline(original: bytes, data: bytes) -> bytes:
    """`data` ending in a newline exactly when `original` did (an edit must not add or drop it)."""
    if original.endswith(b"\n") and not data.endswith(b"\n"):
        return data + b"\n"
    if not original.endswith(b"\n") and data.endswith(b"\n") and original:
        return data.rstrip(b"\n")
    return data


# --- writing ----------------------------------------------------------------------------------


def _writable_bits(mode: int) -> bool:
    return bool(mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


class _Interrupted(BaseException):
    """A termination signal arrived while a temporary file existed."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


@contextmanager
def _signals_raise() -> Iterator[None]:
    """While the body runs, SIGTERM and SIGHUP raise (as SIGINT already does) so that `finally`
    blocks remove the temporary file; the previous handlers come back afterwards."""
    # Here, not at the top: only the writers need them, and a check reads files without
    # (signal, threading and tempfile with random and shutil are ~4 ms of `gen check`'s start).
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, _frame: object) -> None:
        raise _Interrupted(signum)

    previous = {}
    for signum in (signal.SIGTERM, signal.SIGHUP):
        try:
            previous[signum] = signal.signal(signum, handler)
        except (ValueError, OSError):  # pragma: no cover - platform without the signal
            pass
    try:
        yield
    except _Interrupted as stop:
        # Cleanup ran; end as the signal would have (128 + N is the shell's convention).
        raise SystemExit(128 + stop.signum) from None
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)


def _fsync_dir(directory: Path) -> None:
    """Make the rename durable; best effort (some filesystems refuse O_RDONLY on dirs)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _existing_target(path: str, target: Path, *, replace: bool, expected: bytes | None) -> os.stat_result | None:
    """The stat of the file to be replaced (None when it does not exist yet), after every refusal."""
    try:
        if os.path.islink(path):
            raise InputError(f"{path}: is a symbolic link; nothing written (gen does not write through links: "
                             "name the file itself)")
        st = target.stat()
    except FileNotFoundError:
        if expected is not None:
            raise InputError(f"{path}: no such file") from None
        return None
    except OSError as err:
        raise InputError(f"{path}: {_os_message(err)}") from None
    if not stat.S_ISREG(st.st_mode):
        raise InputError(f"{path}: {_kind(st.st_mode)}; nothing written")
    if not replace:
        raise InputError(f"{path} exists; pass --force to overwrite it")
    if not _writable_bits(st.st_mode) or not os.access(target, os.W_OK):
        raise InputError(f"{path}: file is read-only; nothing written")
    if st.st_nlink > 1:
        raise InputError(f"{path}: has {st.st_nlink} hard links; replacing it would split them (the other names "
                         "would keep the old text); nothing written")
    if expected is not None:
        _unchanged(path, target, expected)
    return st


def _unchanged(path: str, target: Path, expected: bytes) -> None:
    """InputError when `target` no longer holds `expected` (another program wrote it)."""
    try:
        current = read_input(target, limit=max(len(expected), 1) * 2 + MIB, trusted=True)
    except InputError as err:
        raise InputError(f"{path}: {err}") from None
    if current != expected:
        raise InputError(f"{path}: changed since it was read; nothing written (run the command again)")


def _recheck(path: str, target: Path, before: os.stat_result, expected: bytes) -> None:
    try:
        now = os.lstat(target)
    except OSError:
        raise InputError(f"{path}: removed since it was read; nothing written") from None
    if (now.st_ino, now.st_size, now.st_mtime_ns) != (before.st_ino, before.st_size, before.st_mtime_ns):
        raise InputError(f"{path}: changed since it was read; nothing written (run the command again)")
    _unchanged(path, target, expected)


def _copy_xattrs(source: Path, fd: int) -> None:
    """The extended attributes of `source` (ACLs, SELinux labels, user.*) onto the open file; best
    effort: a platform or filesystem without them, or an attribute we may not set, is passed over."""
    names = getattr(os, "listxattr", None)
    if names is None:  # pragma: no cover - not Linux
        return
    try:
        keys = os.listxattr(source)
    except OSError:
        return
    for key in keys:
        try:
            os.setxattr(fd, key, os.getxattr(source, key))
        except OSError:
            continue


def write_atomic(path: str | os.PathLike[str], data: bytes | str, *, expected: bytes | None = None,
                 replace: bool = True, mode: int = 0o666) -> None:
    """Replace (or create) the file at `path` with `data`, all or nothing.

    `expected`: the bytes the caller read from `path` and edited; the write is refused when the
    file now holds something else (another program wrote it meanwhile) or no longer exists.
    `replace=False` refuses an existing file. `mode` is for a new file (less the umask); an
    existing file keeps its own mode, owner and group.
    """
    payload = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    name = os.fspath(path)
    if not name or name.endswith(os.sep) or os.path.basename(os.path.normpath(name)) in ("", ".", ".."):
        raise InputError(f"{name or '(empty name)'}: is a directory, not a file name")
    try:
        target = Path(os.path.realpath(name))
    except (OSError, ValueError) as err:
        raise InputError(f"{name}: not a usable file name ({err})") from None
    st = _existing_target(name, target, replace=replace, expected=expected)
    directory = target.parent
    try:
        dir_st = directory.stat()
    except FileNotFoundError:
        raise InputError(f"{name}: directory {directory} does not exist") from None
    except OSError as err:
        raise InputError(f"{name}: cannot use its directory: {err.strerror or err}") from None
    if not stat.S_ISDIR(dir_st.st_mode):
        raise InputError(f"{name}: {directory} is not a directory")
    if not _writable_bits(dir_st.st_mode) or not os.access(directory, os.W_OK):
        raise InputError(f"{name}: directory {directory} is read-only; nothing written")

    import tempfile  # only the writers need it (see _signals_raise)

    temp_name: str | None = None
    with _signals_raise():
        try:
            # The suffix marks a temp file of ours; a short prefix keeps long target names valid.
            fd, temp_name = tempfile.mkstemp(prefix=f".{target.name[:40]}.", suffix=".gen-tmp", dir=directory)
            with os.fdopen(fd, "wb") as handle:
                handle.write(payload)
                handle.flush()
                os.fsync(handle.fileno())
                if st is not None:
                    if (st.st_uid, st.st_gid) != (os.geteuid(), os.getegid()):
                        try:
                            os.fchown(handle.fileno(), st.st_uid, st.st_gid)
                        except PermissionError:
                            raise InputError(f"{name}: its owner or group cannot be kept (the file belongs to "
                                             "another user); nothing written") from None
                    os.fchmod(handle.fileno(), stat.S_IMODE(st.st_mode))
                    _copy_xattrs(target, handle.fileno())
                else:
                    os.fchmod(handle.fileno(), mode & ~_umask())
            if expected is not None and st is not None:
                # Again at the rename: an edit made during the write and fsync above must win.
                _recheck(name, target, st, expected)
            elif st is None and os.path.lexists(target):  # created by someone else meanwhile
                raise InputError(f"{name} exists; pass --force to overwrite it")
            os.replace(temp_name, target)
            temp_name = None
            _fsync_dir(directory)
        except OSError as err:
            kept = "original kept" if st is not None else "nothing written"
            raise InputError(f"{name}: write failed, {kept}: {err.strerror or err}") from None
        finally:
            if temp_name is not None:
                try:
                    os.unlink(temp_name)
                except OSError:
                    pass


__all__ = ["DATA_LIMIT", "MAX_TRAINER_CALLS", "SCRIPT_LIMIT", "STDIN", "keep_final_newline", "read_input", "read_text_input",
           "write_atomic"]
