"""Which model a trainer call trains: --model when given, else the model path its config names
(the packaged registry, a config.json, the Hugging Face cache). The Megatron and FSDP memory
setups (plan/script_setup, plan/fsdp_setup) both ask here."""

from __future__ import annotations

from generator.config.reader import ConfigReader
from generator.model.facts import ModelFacts
from generator.verl.constants import DEFAULT_MODEL_PATH
from generator.verl.constants import MODEL_PATH_KEY as MODEL_PATH


def call_model(reader: ConfigReader, model: ModelFacts | None) -> tuple[ModelFacts | None, str, str | None]:
    """The model facts of a call: --model, else the script's model path; (facts, source, problem)."""
    if model is not None:
        return model, "--model", None
    from generator.model.registry import known_tail, locate_model

    path = reader.str(MODEL_PATH)
    raw = reader.config.values.get(MODEL_PATH)
    if not path and isinstance(raw, str) and MODEL_PATH in reader.config.unknown:
        path = known_tail(raw)  # `$HOME/models/Qwen2.5-7B`: the folder's name still names the model
    if not path or (path == DEFAULT_MODEL_PATH and not reader.explicit(MODEL_PATH)):
        return None, "", f"{MODEL_PATH} is not set or not known; pass --model NAME or a config.json"
    found, _where = locate_model(path)
    if found is None:
        return None, "", f"model '{path}' is not in the registry; pass --model NAME or a config.json"
    return found, MODEL_PATH, None


def model_config_used(reader: ConfigReader, model: ModelFacts | None) -> str:
    """Which config gave the call's model facts ('--model', a config.json path, the Hugging Face
    cache's config.json, the packaged registry entry), for the report."""
    from generator.model.registry import known_tail, locate_model

    if model is not None:
        return "--model"
    path = reader.str(MODEL_PATH)
    raw = reader.config.values.get(MODEL_PATH)
    if not path and isinstance(raw, str) and MODEL_PATH in reader.config.unknown:
        path = known_tail(raw)
    return locate_model(path)[1] if path else ""
