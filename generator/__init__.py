"""verl-gen: write, check and repair launch scripts for verl."""

__version__ = "0.1.0"


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
