"""`gen models`: the models verl-gen knows by name (its packaged registry), as a table or JSON.

Any of the names shown (or a hub id, or an alias) is what `--model` accepts in `gen plan`,
`gen recipe` and `gen explain --memory`; a model that is not listed is given as a folder with
its config.json instead.
"""

from __future__ import annotations

import sys

import typer

from generator.cli.common import say_error
from generator.base.errors import EXIT_BAD_INPUT
from generator.base.safe_text import write


def models_document() -> dict[str, object]:
    """{models: [...]} for `gen models --format json` (docs/json.md, `models`)."""
    from generator.model import list_models, model_slug
    from generator.model.params import total_params

    out = []
    for m in list_models():
        out.append({"name": m.name, "slug": model_slug(m), "hf_ids": list(m.hf_ids), "model_type": m.model_type,
                    "params": total_params(m), "active_params": total_params(m, active=True),
                    "layers": m.num_layers, "hidden_size": m.hidden_size, "attention_heads": m.num_attention_heads,
                    "kv_heads": m.num_kv_heads, "experts": m.num_experts, "experts_per_token": m.experts_per_token,
                    "max_position_embeddings": m.max_position_embeddings, "moe": m.is_moe})
    return {"models": out}


def _billions(count: int) -> str:
    return f"{count / 1e9:.1f}B" if count < 1e11 else f"{count / 1e9:.0f}B"


def register(app: typer.Typer) -> None:
    @app.command("models")
    def models_command(
        fmt: str = typer.Option("text", "--format", "-f", help="text | json"),
        wide: bool = typer.Option(False, "--wide", help="Every column, whole, however wide (piped output keeps "
                                                        "to 100 columns otherwise)."),
    ) -> None:
        """List the models --model accepts by name: size, layers, attention, experts, context."""
        if fmt not in ("text", "json"):
            say_error(f"--format must be text or json, got '{fmt}'")
            raise typer.Exit(EXIT_BAD_INPUT)
        document = models_document()
        if fmt == "json":
            from generator.report.documents import dumps

            write(dumps(document))
            return
        from generator.report.tables import print_table

        headers = ["NAME", "PARAMS", "ACTIVE", "LAYERS", "HIDDEN", "HEADS/KV", "EXPERTS", "CONTEXT", "HUB ID"]
        rows = []
        for m in document["models"]:  # type: ignore[attr-defined]
            experts = f"{m['experts']} (top {m['experts_per_token']})" if m["moe"] else "-"
            rows.append([m["name"], _billions(m["params"]), _billions(m["active_params"]) if m["moe"] else "-",
                         str(m["layers"]), str(m["hidden_size"]), f"{m['attention_heads']}/{m['kv_heads']}",
                         experts, f"{m['max_position_embeddings']:,}", ", ".join(m["hf_ids"][:1])])
        print_table(headers, rows, stream=sys.stdout, optional=("HUB ID", "CONTEXT", "HIDDEN"), wide=wide)
