"""Hypothesis strategies for launch scripts: random mixes of the constructs the reader
supports (assignments, exports, `${V:-d}` and other expansions, arrays, `$((…))`, string
variables word-split into the call, `if`/`case`/loops/functions, heredocs, wrappers, comments
inside continuations, `"$@"`), random quoting of override values, and damage — truncation at
any byte, random bytes spliced in, NUL bytes, invalid UTF-8.

Shared by tests/fuzz/test_fuzz_cli.py (small default run) and bench/fuzz.py (long runs).
"""

from __future__ import annotations

from hypothesis import strategies as st

KEYS = (
    "data.train_batch_size", "data.max_prompt_length", "data.max_response_length", "data.train_files",
    "data.val_files", "data.filter_overlong_prompts", "data.truncation",
    "actor_rollout_ref.model.path", "actor_rollout_ref.model.use_fused_kernels",
    "actor_rollout_ref.actor.ppo_mini_batch_size", "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu",
    "actor_rollout_ref.actor.ppo_micro_batch_size", "actor_rollout_ref.actor.use_dynamic_bsz",
    "actor_rollout_ref.actor.ppo_max_token_len_per_gpu", "actor_rollout_ref.actor.optim.lr",
    "actor_rollout_ref.actor.use_kl_loss", "actor_rollout_ref.actor.kl_loss_coef",
    "actor_rollout_ref.actor.megatron.tensor_model_parallel_size",
    "actor_rollout_ref.actor.megatron.pipeline_model_parallel_size",
    "actor_rollout_ref.actor.megatron.context_parallel_size",
    "actor_rollout_ref.actor.megatron.expert_model_parallel_size",
    "actor_rollout_ref.actor.megatron.param_offload", "actor_rollout_ref.actor.megatron.optimizer_offload",
    "actor_rollout_ref.actor.megatron.override_transformer_config.recompute_granularity",
    "actor_rollout_ref.rollout.n", "actor_rollout_ref.rollout.name", "actor_rollout_ref.rollout.mode",
    "actor_rollout_ref.rollout.tensor_model_parallel_size", "actor_rollout_ref.rollout.gpu_memory_utilization",
    "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu",
    "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu",
    "actor_rollout_ref.model.enable_gradient_checkpointing",
    "critic.ppo_micro_batch_size_per_gpu", "critic.megatron.tensor_model_parallel_size",
    "algorithm.adv_estimator", "algorithm.use_kl_in_reward",
    "trainer.n_gpus_per_node", "trainer.nnodes", "trainer.logger", "trainer.project_name",
    "trainer.total_epochs", "trainer.save_freq", "no.such.key", "actor_rollout_ref.actor.ppo_mini_batch_sise",
)
VARS = ("TP", "PP", "N", "BS", "MINI", "MICRO", "MODEL_PATH", "HOME", "NNODES", "train_files", "x", "ARGS")
WORDS = ("grpo", "gae", "vllm", "sglang", "async", "sync", "error", "left", "full", "console", "wandb",
         "Qwen/Qwen2-7B-Instruct", "$HOME/data/gsm8k/train.parquet", "/models/Qwen2.5-7B-Instruct",
         "deepseek-ai/DeepSeek-V3", "a b", "it's", 'say "hi"', "`touch /tmp/verl_gen_fuzz_marker`",
         "$(touch /tmp/verl_gen_fuzz_marker)", "*", "[a]", "\\", "ü", "🙂", "")

ints = st.sampled_from([0, 1, 2, 3, 4, 5, 8, 16, 24, 32, 64, 128, 256, 512, 1024, 4096, 12000, -1, 10**20])
floats = st.sampled_from(["0.5", "0.6", "1e-6", "1.0", "nan", "inf", "-0.0", "1e400"])
bools = st.sampled_from(["True", "False", "true", "false", "TRUE", "yes", "null", "None"])
lists = st.sampled_from(["['console','wandb']", '["console","wandb"]', "[console, wandb]", "[]", "[1,[2,[3]]]",
                         "{a: 1}", "[", "]", "['a',", "{}"])
variable = st.sampled_from(VARS)


@st.composite
def value_text(draw) -> str:
    kind = draw(st.integers(0, 9))
    if kind == 0:
        return str(draw(ints))
    if kind == 1:
        return draw(floats)
    if kind == 2:
        return draw(bools)
    if kind == 3:
        return draw(lists)
    if kind == 4:
        return "$" + draw(variable)
    if kind == 5:
        name = draw(variable)
        return draw(st.sampled_from([f"${{{name}}}", f"${{{name}:-{draw(ints)}}}", f"${{{name}:=x}}",
                                     f"${{{name}//a/b}}", f"${{#{name}}}", f"${{{name}%.*}}",
                                     f"${{{name}:?unset}}", f"${{{name}^^}}", f"${{{name}:1:2}}"]))
    if kind == 6:
        return f"$(({draw(variable)} * {draw(ints)} + {draw(ints)}))"
    if kind == 7:
        return draw(st.sampled_from(["$(nproc)", "`hostname`", "$1", "$@", "$RANDOM", "~/x", "*.parquet"]))
    if kind == 8:
        return draw(st.sampled_from(WORDS))
    return draw(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12))


def quote(text: str, style: int) -> str:
    if style == 1:
        return "'" + text.replace("'", "'\\''") + "'"
    if style == 2:
        return '"' + text.replace('"', '\\"') + '"'
    if style == 3:  # unbalanced on purpose
        return '"' + text
    return text


@st.composite
def override_word(draw) -> str:
    op = draw(st.sampled_from(["", "", "", "+", "++", "~"]))
    key = draw(st.sampled_from(KEYS))
    if op == "~":
        return "~" + key
    value = quote(draw(value_text()), draw(st.integers(0, 3)))
    whole = draw(st.integers(0, 5))
    word = f"{op}{key}={value}"
    return quote(word, 1) if whole == 0 else word


@st.composite
def assignment(draw) -> str:
    name = draw(variable)
    value = quote(draw(value_text()), draw(st.integers(0, 2)))
    form = draw(st.integers(0, 6))
    if form == 0:
        return f"export {name}={value}"
    if form == 1:
        return f"{name}=${{{name}:-{value}}}"
    if form == 2:
        return f"{name}=({value} {quote(draw(value_text()), 1)})"
    if form == 3:
        return f"{name}+=({value})"
    if form == 4:
        return f"declare -a {name}=({value})"
    if form == 5:
        return f"local {name}={value}"
    return f"{name}={value}"


LAUNCHERS = ("python3 -m verl.trainer.main_ppo", "python -u -m verl.trainer.main_ppo",
             "python3 -m recipe.dapo.main_dapo", "torchrun --nproc_per_node=8 -m verl.trainer.main_ppo",
             'ray job submit --address="$RAY_ADDRESS" -- python3 -m verl.trainer.main_ppo',
             "srun --nodes=1 python3 -m verl.trainer.main_ppo", "nohup python3 -m verl.trainer.main_ppo",
             "env VLLM_USE_V1=1 python3 -m verl.trainer.main_ppo", "HYDRA_FULL_ERROR=1 python3 -m verl.trainer.main_ppo",
             "python3 -m verl.trainer.main_generation", "python3 main.py", "timeout 10 python3 -m verl.trainer.main_ppo")


@st.composite
def invocation(draw) -> str:
    launcher = draw(st.sampled_from(LAUNCHERS))
    head = [launcher]
    if draw(st.booleans()):
        head.append(draw(st.sampled_from(["--config-path=config", "--config-name='ppo_megatron_trainer.yaml'",
                                          "--config-name ppo_trainer", "--config-path ./config"])))
    words = draw(st.lists(override_word(), min_size=0, max_size=14))
    if draw(st.booleans()):
        words.append(draw(st.sampled_from(['"${ARGS[@]}"', "$ARGS", '"$@"', "$@", "${@:2}", "$*"])))
    lines = [" ".join(head)]
    for word in words:
        glue = draw(st.integers(0, 9))
        if glue == 0:
            lines.append("    # a comment inside the continued command")
        elif glue == 1:
            lines[-1] += " \\  "  # backslash followed by spaces
            lines.append("    " + word)
            continue
        lines[-1] += " \\"
        lines.append("    " + word)
    tail = draw(st.sampled_from(["", " 2>&1 | tee log.txt", " &", " > out.log", " $@", " \\"]))
    return "\n".join(lines) + tail


@st.composite
def block(draw) -> str:
    kind = draw(st.integers(0, 9))
    if kind <= 2:
        return draw(assignment())
    if kind == 3:
        inner = draw(invocation())
        return f'if [ "${draw(variable)}" = "{draw(st.sampled_from(WORDS))}" ]; then\n{inner}\nelse\n  {draw(assignment())}\nfi'
    if kind == 4:
        return f"for {draw(variable)} in 1 2 4; do\n{draw(invocation())}\ndone"
    if kind == 5:
        return f"run() {{\n{draw(invocation())}\n}}\nrun"
    if kind == 6:
        return f"cat <<EOF > cfg.yaml\n{draw(value_text())}\nEOF"
    if kind == 7:
        return draw(st.sampled_from(["set -xeuo pipefail", "source ./common.sh", ". env.sh", "cd $(dirname $0)",
                                     "# comment", "", "shift", "case $1 in a) X=1;; *) X=2;; esac",
                                     "[[ -n $X ]] && Y=2", "ARGS=\"a=1 b=2\""]))
    return draw(invocation())


@st.composite
def script_text(draw) -> str:
    blocks = draw(st.lists(block(), min_size=1, max_size=8))
    if not any("python" in b for b in blocks):
        blocks.append(draw(invocation()))
    return "#!/usr/bin/env bash\n" + "\n".join(blocks) + draw(st.sampled_from(["\n", "", "\n\n"]))


@st.composite
def script_bytes(draw) -> bytes:
    """A script, sometimes damaged the way real files get damaged."""
    data = draw(script_text()).encode("utf-8")
    damage = draw(st.integers(0, 9))
    if damage == 0 and data:
        data = data[: draw(st.integers(0, len(data)))]  # truncated (maybe mid-UTF-8)
    elif damage == 1:
        at = draw(st.integers(0, len(data)))
        data = data[:at] + draw(st.binary(min_size=1, max_size=8)) + data[at:]
    elif damage == 2:
        at = draw(st.integers(0, len(data)))
        data = data[:at] + draw(st.sampled_from([b"\x00", b"\xff", b"\r\n", b"\\\n", b"'", b'"', b"$((", b"${",
                                                 b"<<EOF\n", b"\xc3"])) + data[at:]
    elif damage == 3:
        data = data.replace(b"\n", b"\r\n")
    return data
