"""verl-gen: write, check and repair launch scripts for verl."""

from typing import Any

# The version is not written here: it is the release's git tag, which the build stamps into the
# installed package's metadata (pyproject.toml [tool.hatch.version]). One home: the tag.
_UNINSTALLED = "0.0.0+unknown"  # a source tree on sys.path that was never installed


def _installed_version() -> str:
    from importlib import metadata

    try:
        return metadata.version("verl-gen")
    except metadata.PackageNotFoundError:
        return _UNINSTALLED


def __getattr__(name: str) -> Any:  # `from generator import __version__` reads it when asked (PEP 562)
    if name == "__version__":
        return _installed_version()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def project_url() -> str | None:
    """The project's home page from the installed package's metadata ([project.urls] Homepage),
    None when it declares none."""
    from importlib import metadata

    try:
        meta = metadata.metadata("verl-gen")
    except metadata.PackageNotFoundError:
        return None
    for entry in meta.get_all("Project-URL") or []:
        label, _, url = str(entry).partition(",")
        if label.strip().lower() in ("homepage", "home", "source", "repository"):
            return url.strip()
    home = meta.get_all("Home-page")  # a PackageMetadata is an email.message.Message at run time
    return str(home[0]) if home else None
