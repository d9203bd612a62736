"""The project's one door to the file system: `read_input` for everything it reads from the
user, `write_atomic` for everything it writes.

Reading: only regular files (and stdin as `-`). A FIFO, device, socket or directory is refused
from its `stat` before it is opened, so `gen check /dev/zero` or a FIFO never blocks or grows;
the size cap is checked before reading and again while reading (a file may grow in between).

Writing: a temporary file in the target's directory, flushed, given the original's mode, owner
and group, then renamed over the target (all or nothing). The directory is reached from the top
of the project (or the working directory) one component at a time, opened without following a
link, and every later step works on that open directory: no symbolic link, at any level of the
path, turns a write inside the project into one elsewhere (`examples -> ../other` with
`gen fix --write examples/`, issue 35; `--chart report.html` linked to a dotfile, issue 21).
Refused with one line, nothing written: a target that is not a regular file (FIFO, device,
directory), a read-only file or directory, a file with several hard links (replacing it would
silently split them: the other names would keep the old text), a file whose contents changed
since the caller read it, an owner or group that cannot be kept, a link at any level. An
existing file is replaced only when the caller says so (`--force`; `gen fix` edits in place).
The rename is a compare-and-swap: the file to be replaced is given a second name first, compared
(identity, size, mtime and, with `expected`, content), renamed over, and compared again through
the second name: an edit another program made up to the rename itself is found, and its text is
put back. Extended attributes (ACLs among them) are copied to the new file where the platform
allows. The temporary file is removed on any failure, including SIGTERM/SIGHUP/SIGINT arriving
during the write.

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

from generator.base import boundary, session
from generator.base.folder_memo import holds_git, holds_marker, project_chain
from generator.base.errors import InputError

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
    being judged, a path outside its project is refused unread (generator.base.boundary.OutsideProject);
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
            data = _read_bounded(handle, limit, what)
        except OSError as err:
            raise InputError(_os_message(err)) from None
    if session.current().recorders:
        _record(name, data)
    return data


# --- what a result depends on -----------------------------------------------------------------
# A value kept across runs (generator.base.cache) must be keyed by every file it was computed from,
# including files reached through a linked folder or a `../` defaults entry that a walk of one
# folder does not see (issue 35). While a recorder is open, every file read here and every file
# looked for and not found (probe_file) is noted: path -> SHA-256 of its bytes, or ABSENT.
ABSENT = "-"


@contextmanager
def recording_reads() -> Iterator[dict[str, str]]:
    """Note every file read (and every file probed for and absent) until the block ends; the
    recorders belong to the command's session (generator.base.session)."""
    found: dict[str, str] = {}
    recorders = session.current().recorders
    recorders.append(found)
    try:
        yield found
    finally:
        recorders.remove(found)


def _record(name: str, data: bytes | None) -> None:
    import hashlib  # only while recording (a cache miss): OpenSSL's _hashlib is ~3 ms of a start

    digest = ABSENT if data is None else hashlib.sha256(data).hexdigest()
    for found in session.current().recorders:
        found.setdefault(os.path.abspath(name), digest)


def probe_file(path: str | os.PathLike[str]) -> bool:
    """Whether `path` is a regular file (links followed), noted while recording when it is not:
    a file created later where a lookup found none changes the result."""
    present = os.path.isfile(path)
    if not present and session.current().recorders:
        _record(os.fspath(path), None)
    return present


def digest_of(path: str | os.PathLike[str], limit: int = DATA_LIMIT) -> str | None:
    """What recording_reads notes for `path` now (ABSENT when it is not a regular file), read
    through read_input (bounded, inside the project); None when it cannot be read."""
    import hashlib

    if not os.path.isfile(path):
        return ABSENT
    try:
        return hashlib.sha256(read_input(path, limit=limit, what="config file")).hexdigest()
    except InputError:
        return None


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


_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_LINK_REFUSED = "is a symbolic link; nothing written (gen does not write through links: name the file itself)"


def _write_anchor(folder: str) -> str:
    """The folder below which no component of a written path may be a link: the top of the
    project the target is in (generator.base.folder_memo.project_chain: `.git` or a project marker);
    outside a project, the working directory when it holds the target; else the target's folder.
    What lies above it is the user's own layout (a home folder that is a link, /tmp on macOS)."""
    chain = project_chain(Path(folder))
    if len(chain) > 1 or holds_git(chain[-1]) or holds_marker(chain[-1]):
        return str(chain[-1])
    try:
        cwd = os.getcwd()
    except OSError:
        return folder
    return cwd if folder == cwd or folder.startswith(cwd.rstrip(os.sep) + os.sep) else folder


def _open_folder(name: str, folder: str) -> int:
    """A descriptor of `folder` (absolute, as written), reached from its anchor one component at
    a time without following a link: a committed `examples -> ../other` cannot turn a write
    inside the project into one outside it (issue 35). InputError (one line) otherwise."""
    anchor = _write_anchor(folder)
    parts = [] if folder == anchor else os.path.relpath(folder, anchor).split(os.sep)
    try:
        fd = os.open(anchor, _DIR_FLAGS)
    except FileNotFoundError:
        raise InputError(f"{name}: directory {folder} does not exist") from None
    except OSError as err:
        raise InputError(f"{name}: cannot use its directory: {err.strerror or err}") from None
    here = anchor
    try:
        for part in parts:
            here = os.path.join(here, part)
            info = os.stat(part, dir_fd=fd, follow_symlinks=False)
            if stat.S_ISLNK(info.st_mode):
                raise InputError(f"{name}: {here} {_LINK_REFUSED}")
            if not stat.S_ISDIR(info.st_mode):
                raise InputError(f"{name}: {here} is not a directory")
            inner = os.open(part, _DIR_FLAGS | _NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = inner
    except FileNotFoundError:
        os.close(fd)
        raise InputError(f"{name}: directory {folder} does not exist") from None
    except OSError as err:
        os.close(fd)
        raise InputError(f"{name}: cannot use its directory: {err.strerror or err}") from None
    except InputError:
        os.close(fd)
        raise
    return fd


def _read_leaf(folder: int, leaf: str, limit: int) -> tuple[bytes, os.stat_result]:
    """The bytes (at most `limit`) and stat of the regular file `leaf` in the open folder, opened
    without following a link."""
    flags = os.O_RDONLY | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(leaf, flags, dir_fd=folder)
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise InputError(_kind(info.st_mode))
        return handle.read(limit), info


def _existing_target(name: str, folder: int, leaf: str, *, replace: bool, expected: bytes | None
                     ) -> os.stat_result | None:
    """The stat of the file to be replaced (None when it does not exist yet), after every refusal."""
    try:
        st = os.stat(leaf, dir_fd=folder, follow_symlinks=False)
    except FileNotFoundError:
        if expected is not None:
            raise InputError(f"{name}: no such file") from None
        return None
    except OSError as err:
        raise InputError(f"{name}: {_os_message(err)}") from None
    if stat.S_ISLNK(st.st_mode):
        raise InputError(f"{name}: {_LINK_REFUSED}")
    if not stat.S_ISREG(st.st_mode):
        raise InputError(f"{name}: {_kind(st.st_mode)}; nothing written")
    if not replace:
        raise InputError(f"{name} exists; pass --force to overwrite it")
    if not _writable_bits(st.st_mode) or not os.access(leaf, os.W_OK, dir_fd=folder):
        raise InputError(f"{name}: file is read-only; nothing written")
    if st.st_nlink > 1:
        raise InputError(f"{name}: has {st.st_nlink} hard links; replacing it would split them (the other names "
                         "would keep the old text); nothing written")
    if expected is not None and not _holds(folder, leaf, expected):
        raise InputError(f"{name}: changed since it was read; nothing written (run the command again)")
    return st


def _holds(folder: int, leaf: str, expected: bytes) -> bool:
    """Whether the file `leaf` holds exactly `expected` (False when it cannot be read)."""
    try:
        data, _info = _read_leaf(folder, leaf, len(expected) + 1)
    except (OSError, InputError):
        return False
    return data == expected


def _copy_xattrs(folder: int, leaf: str, fd: int) -> None:
    """The extended attributes of the file `leaf` (ACLs, SELinux labels, user.*) onto the open
    file; best effort: a platform or filesystem without them, or an attribute we may not set,
    is passed over."""
    if getattr(os, "listxattr", None) is None:  # pragma: no cover - not Linux
        return
    try:
        source = os.open(leaf, os.O_RDONLY | _NOFOLLOW | getattr(os, "O_CLOEXEC", 0), dir_fd=folder)
    except OSError:
        return
    try:
        keys = os.listxattr(source)
        for key in keys:
            try:
                os.setxattr(fd, key, os.getxattr(source, key))
            except OSError:
                continue
    except OSError:
        return
    finally:
        os.close(source)


def _new_temp(folder: int, leaf: str) -> tuple[int, str]:
    """A new temporary file beside the target (never an existing name, never through a link)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    for _ in range(64):
        # The suffix marks a temp file of ours; a short prefix keeps long target names valid.
        temp = f".{leaf[:40]}.{os.urandom(6).hex()}.gen-tmp"
        try:
            return os.open(temp, flags, 0o600, dir_fd=folder), temp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary name")


def _link_aside(folder: int, leaf: str) -> str | None:
    """A second name for the file about to be replaced, so that an edit another program makes
    to it up to the rename stays reachable (compare-and-swap); None where the filesystem has no
    hard links (the rename is then guarded by a check just before it)."""
    for _ in range(64):
        aside = f".{leaf[:40]}.{os.urandom(6).hex()}.gen-old"
        try:
            os.link(leaf, aside, src_dir_fd=folder, dst_dir_fd=folder, follow_symlinks=False)
            return aside
        except FileExistsError:
            continue
        except OSError as err:
            if err.errno in (errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EMLINK, errno.EXDEV, errno.ENOSYS):
                return None
            raise
    return None


def _changed(name: str) -> InputError:
    return InputError(f"{name}: changed since it was read; nothing written (run the command again)")


def _same(before: os.stat_result, now: os.stat_result) -> bool:
    return (now.st_ino, now.st_size, now.st_mtime_ns) == (before.st_ino, before.st_size, before.st_mtime_ns)


def _swap(name: str, folder: int, temp: str, leaf: str, before: os.stat_result, expected: bytes | None) -> None:
    """Rename the temporary file over `leaf` only if `leaf` is still the file read (compare and
    swap): its identity, size, mtime and (with `expected`) content are compared through a second
    name held across the rename, so an append made in the gap between the comparison and the
    rename is found afterwards and the other program's text is put back."""
    aside = _link_aside(folder, leaf)
    if aside is None:
        now = os.stat(leaf, dir_fd=folder, follow_symlinks=False)
        if not _same(before, now) or (expected is not None and not _holds(folder, leaf, expected)):
            raise _changed(name)
        os.replace(temp, leaf, src_dir_fd=folder, dst_dir_fd=folder)
        return
    keep_aside = False
    try:
        held = os.stat(aside, dir_fd=folder, follow_symlinks=False)
        if not _same(before, held) or (expected is not None and not _holds(folder, aside, expected)):
            raise _changed(name)
        os.replace(temp, leaf, src_dir_fd=folder, dst_dir_fd=folder)
        after = os.stat(aside, dir_fd=folder, follow_symlinks=False)
        if _same(before, after) and (expected is None or _holds(folder, aside, expected)):
            return
        # Another program wrote the old file between the comparison and the rename: its text wins.
        try:
            os.replace(aside, leaf, src_dir_fd=folder, dst_dir_fd=folder)
        except OSError:
            keep_aside = True
            raise InputError(f"{name}: changed while it was being written; the other program's text is kept "
                             f"in {aside} beside it") from None
        aside = ""
        raise InputError(f"{name}: changed while it was being written; its text was put back, nothing written "
                         "(run the command again)")
    finally:
        if aside and not keep_aside:
            _unlink_quietly(aside, folder)


def _unlink_quietly(leaf: str, folder: int) -> None:
    """Remove a helper name of ours (a temporary file, the compare-and-swap's second link); one
    already gone is fine."""
    try:
        os.unlink(leaf, dir_fd=folder)
    except OSError:
        pass


def _place_new(name: str, folder: int, temp: str, leaf: str) -> None:
    """Give the temporary file the target's name only if no file has it (a hard link fails when
    the name exists: another program created it meanwhile)."""
    try:
        os.link(temp, leaf, src_dir_fd=folder, dst_dir_fd=folder, follow_symlinks=False)
    except FileExistsError:
        raise InputError(f"{name} exists; pass --force to overwrite it") from None
    except OSError as err:
        if err.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EMLINK, errno.EXDEV, errno.ENOSYS):
            raise
        try:
            os.stat(leaf, dir_fd=folder, follow_symlinks=False)
        except FileNotFoundError:
            os.replace(temp, leaf, src_dir_fd=folder, dst_dir_fd=folder)
            return
        raise InputError(f"{name} exists; pass --force to overwrite it") from None
    os.unlink(temp, dir_fd=folder)


def _write_temp(name: str, folder: int, leaf: str, payload: bytes, st: os.stat_result | None, mode: int) -> str:
    """The temporary file holding `payload`, flushed, with the original's owner, group, mode and
    extended attributes (or `mode` less the umask for a new file); its name."""
    fd, temp = _new_temp(folder, leaf)
    try:
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
                _copy_xattrs(folder, leaf, handle.fileno())
            else:
                os.fchmod(handle.fileno(), mode & ~_umask())
    except BaseException:
        try:
            os.unlink(temp, dir_fd=folder)
        except OSError:
            pass
        raise
    return temp


def write_atomic(path: str | os.PathLike[str], data: bytes | str, *, expected: bytes | None = None,
                 replace: bool = True, mode: int = 0o666) -> None:
    """Replace (or create) the file at `path` with `data`, all or nothing.

    `expected`: the bytes the caller read from `path` and edited; the write is refused when the
    file now holds something else (another program wrote it meanwhile, up to the rename itself)
    or no longer exists. `replace=False` refuses an existing file. `mode` is for a new file (less
    the umask); an existing file keeps its own mode, owner and group. No component of the path
    below its project's top (or the working directory) may be a link (see _write_anchor).
    """
    payload = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    name = os.fspath(path)
    if not name or name.endswith(os.sep) or os.path.basename(os.path.normpath(name)) in ("", ".", ".."):
        raise InputError(f"{name or '(empty name)'}: is a directory, not a file name")
    try:
        directory, leaf = os.path.split(os.path.abspath(name))
    except (OSError, ValueError) as err:
        raise InputError(f"{name}: not a usable file name ({err})") from None
    if "\0" in name:
        raise InputError(f"{name!r}: not a usable file name")
    folder = _open_folder(name, directory)
    try:
        _write_in(name, folder, directory, leaf, payload, expected=expected, replace=replace, mode=mode)
    finally:
        os.close(folder)


def _write_in(name: str, folder: int, directory: str, leaf: str, payload: bytes, *, expected: bytes | None,
              replace: bool, mode: int) -> None:
    st = _existing_target(name, folder, leaf, replace=replace, expected=expected)
    dir_st = os.fstat(folder)
    if not _writable_bits(dir_st.st_mode) or not os.access(".", os.W_OK, dir_fd=folder):
        raise InputError(f"{name}: directory {directory} is read-only; nothing written")
    temp: str | None = None
    with _signals_raise():
        try:
            temp = _write_temp(name, folder, leaf, payload, st, mode)
            if st is None:
                _place_new(name, folder, temp, leaf)
            else:
                _swap(name, folder, temp, leaf, st, expected)
            temp = None
            try:
                os.fsync(folder)  # make the rename durable; best effort
            except OSError:
                pass
        except OSError as err:
            kept = "original kept" if st is not None else "nothing written"
            raise InputError(f"{name}: write failed, {kept}: {err.strerror or err}") from None
        finally:
            if temp is not None:
                _unlink_quietly(temp, folder)


__all__ = ["ABSENT", "DATA_LIMIT", "MAX_TRAINER_CALLS", "SCRIPT_LIMIT", "STDIN", "digest_of", "keep_final_newline",
           "probe_file", "read_input", "read_text_input", "recording_reads", "write_atomic"]
