"""derive.py: the chain of docs/batch-chain.md, its worked examples, and the layout
predicates the planner shares with the rules."""

from __future__ import annotations

import pytest

from generator.layout import derive
from generator.layout.derive import Layout, batch_chain, layout_problems, rollout_problems
from generator.model.facts import ModelFacts
from generator.judging import problem_code

QWEN7B = ModelFacts(name="Qwen2.5-7B", hidden_size=3584, num_layers=28, num_attention_heads=28,
                    num_kv_heads=4, head_dim=128, ffn_hidden_size=18944, vocab_size=152064,
                    max_position_embeddings=32768)
MOE = ModelFacts(name="Qwen3-30B-A3B", hidden_size=2048, num_layers=48, num_attention_heads=32,
                 num_kv_heads=4, head_dim=128, ffn_hidden_size=6144, vocab_size=151936,
                 max_position_embeddings=40960, num_experts=128, experts_per_token=8,
                 expert_ffn_hidden_size=768)


def code_of(problem):
    """The rule code generator.rules maps a derive problem kind to."""
    return problem_code(problem.kind)


def codes(problems):
    return sorted(code_of(p) for p in problems)


# --- worked examples (§1.11) ----------------------------------------------------------------

def test_example_1_all_rules_pass():
    dp = derive.data_parallel_size(16, 4, 2, 1)
    assert dp == 2
    chain = batch_chain(prompts=128, n=8, mini=32, dp=dp, micro=4, epochs=1)
    assert chain.responses_per_step == 1024
    assert derive.minimal_batch(dp, 4, 16, "megatron") == 8
    assert chain.per_rank_mini_batch == 128 and not chain.floored
    assert chain.local_batch == 512
    assert chain.mini_batches_per_epoch == 4
    assert chain.optimizer_updates_per_step == 4
    assert chain.grad_accum_steps == 32
    assert derive.agent_loop_chunk(1024, 8) == 128
    assert derive.rollout_replicas(16, derive.rollout_replica_size(4)) == 4
    assert layout_problems(Layout(gpus=16, tp=4, pp=2)) == []


def test_example_2_megatron_fails_fsdp_runs_extra_update():
    dp = derive.data_parallel_size(8, 2, 1, 1)
    assert dp == 4
    chain = batch_chain(prompts=60, n=4, mini=24, dp=dp, micro=2)
    assert chain.responses_per_step == 240
    assert 240 % derive.minimal_batch(dp, 2, 8, "megatron") == 0  # validate_config passes
    assert chain.per_rank_mini_batch == 24 and chain.local_batch == 60
    assert chain.mini_batch_remainder == 12  # 60 % 24: make_iterator asserts
    assert chain.mini_batches_per_epoch is None and chain.optimizer_updates_per_step is None
    fsdp = batch_chain(prompts=60, n=4, mini=24, dp=8, micro=2, path="fsdp")
    assert fsdp.per_rank_mini_batch == 12 and fsdp.local_batch == 30
    assert fsdp.micro_remainder == 0
    assert fsdp.mini_batches_per_epoch == 3  # 12, 12, 6
    assert fsdp.intended_updates_per_step == 2.5


def test_example_3_silent_flooring():
    chain = batch_chain(prompts=160, n=1, mini=20, dp=8)
    assert chain.per_rank_mini_batch == 2 and chain.floored
    assert chain.effective_responses_per_update == 16
    assert chain.local_batch == 20
    assert chain.mini_batches_per_epoch == 10
    assert chain.intended_updates_per_step == 8


# --- layout predicates -----------------------------------------------------------------------

def test_dp_excludes_cp_and_ep():
    assert derive.data_parallel_size(16, 2, 2, 1) == 4
    assert derive.expert_data_parallel_size(16, 2, 2, 4) == 1  # §5 example: EDP 1, DP 4
    assert derive.data_parallel_size(8, 3, 1, 1) is None
    assert derive.expert_data_parallel_size(8, 4, 2, 8, 1) is None


def test_e1_message_in_user_numbers():
    (problem,) = layout_problems(Layout(gpus=8, tp=3))
    assert code_of(problem) == "VP301"
    assert problem.message == "8 GPUs are not divisible by TP·PP·CP = 3·1·1 = 3"


def test_e2_vpp_needs_pp():
    assert codes(layout_problems(Layout(gpus=8, tp=2, vpp=2))) == ["VP302"]
    assert layout_problems(Layout(gpus=8, tp=2, pp=2, vpp=2)) == []


def test_e3_expert_grid_corpus_cases():
    # recipe/dapo/test_dapo_qwen3_moe_30b_megatron_fp16.sh: W=32, TP=4, PP=4, EP=8, ETP unset
    (problem,) = layout_problems(Layout(gpus=32, tp=4, pp=4, ep=8))
    assert code_of(problem) == "VP303" and "4·8·4 = 128" in problem.message
    # low_precision fp8e2e: W=8, TP=4, PP=2, EP=8, ETP=1
    (problem,) = layout_problems(Layout(gpus=8, tp=4, pp=2, ep=8, etp=1))
    assert "1·8·2 = 16" in problem.message
    assert layout_problems(Layout(gpus=16, tp=4, pp=2, ep=8, etp=1)) == []


def test_tp_within_node():
    assert codes(layout_problems(Layout(gpus=16, tp=16, gpus_per_node=8))) == ["VP304"]
    assert layout_problems(Layout(gpus=16, tp=8, gpus_per_node=8)) == []


def test_model_shape_rules():
    assert codes(layout_problems(Layout(gpus=8, tp=8), QWEN7B)) == ["VM801", "VM802"]
    assert codes(layout_problems(Layout(gpus=8, tp=4), QWEN7B)) == []
    assert codes(layout_problems(Layout(gpus=8, tp=1, ep=2), QWEN7B)) == ["VM803"]
    assert codes(layout_problems(Layout(gpus=8, tp=1, ep=8), MOE)) == []
    assert codes(layout_problems(Layout(gpus=24, tp=1, ep=3, etp=1), MOE)) == ["VM804"]
    msg = layout_problems(Layout(gpus=24, tp=1, ep=3, etp=1), MOE)[0].message
    assert "128 experts are not divisible by EP 3" in msg


def test_pipeline_layer_splits():
    # 28 layers, PP 3: uneven without first/last -> VM805
    (problem,) = layout_problems(Layout(gpus=3, pp=3), QWEN7B)
    assert code_of(problem) == "VM805" and "28 % 3 = 1" in problem.message
    # first=10, last=10 leaves 8 for 1 middle stage: fine
    assert layout_problems(Layout(gpus=3, pp=3, first_stage_layers=10, last_stage_layers=10), QWEN7B) == []
    # first=9 leaves 19 for 2 middle stages: not divisible
    (problem,) = layout_problems(Layout(gpus=3, pp=3, first_stage_layers=9), QWEN7B)
    assert code_of(problem) == "VM806" and "28 - 9 - 0 = 19" in problem.message
    # 28/PP 2 = 14 per stage, VPP 4 does not divide 14
    (problem,) = layout_problems(Layout(gpus=2, pp=2, vpp=4), QWEN7B)
    assert code_of(problem) == "VM807" and "= 14" in problem.message
    assert layout_problems(Layout(gpus=2, pp=2, vpp=2), QWEN7B) == []


def test_rollout_problems():
    assert rollout_problems(16, 4) == []
    assert codes(rollout_problems(12, 8)) == ["VR501"]
    assert codes(rollout_problems(16, 2, 2, rollout_ep=2)) == ["VR502"]
    assert codes(rollout_problems(16, 2, rollout_pp=2)) == ["VR503"]
    assert codes(rollout_problems(24, 12, gpus_per_node=8)) == ["VR504"]
    assert rollout_problems(16, 16, gpus_per_node=8) == []
    assert codes(rollout_problems(8, 8, model=QWEN7B)) == ["VM808"]


# --- helpers for fixes -----------------------------------------------------------------------

def test_nearest_mini_and_micro():
    # Example 2: P=60, n=4, DP=4, M=24 is invalid; nearest valid keeps P, n, DP
    mini = derive.nearest_mini(60, 4, 4, 24)
    chain = batch_chain(prompts=60, n=4, mini=mini, dp=4, micro=2)
    assert chain.mini_batch_remainder == 0 and not chain.floored
    assert mini in (20, 30)
    assert derive.nearest_micro(320, 24) == 20
    assert derive.nearest_micro(0, 4) is None


@pytest.mark.parametrize("micro_batches, pp, group, ok", [
    (4, 2, None, True), (1, 2, None, False), (5, 4, None, False), (6, 4, None, False), (8, 4, None, True),
    (10, 2, 4, True),  # remainder 2 is >= PP 2 with a group of 4
    (9, 2, 4, False),  # remainder 1 < PP 2
])
def test_vpp_micro_batches(micro_batches, pp, group, ok):
    assert (derive.vpp_micro_batch_problem(micro_batches, pp, group) is None) is ok


# --- properties --------------------------------------------------------------------------------

from hypothesis import given, settings, strategies as st  # noqa: E402


@settings(max_examples=200, deadline=None)
@given(prompts=st.integers(1, 512), n=st.integers(1, 16), dp=st.sampled_from([1, 2, 3, 4, 6, 8, 16]),
       mini=st.integers(1, 512))
def test_nearest_mini_always_gives_an_even_chain(prompts, n, dp, mini):
    new = derive.nearest_mini(prompts, n, dp, mini)
    if (prompts * n) % dp:
        assert new is None  # nothing fixes G % DP without changing P, n or the GPUs
        return
    assert new is not None and 1 <= new <= prompts  # M = P always works when G % DP == 0
    chain = batch_chain(prompts=prompts, n=n, mini=new, dp=dp)
    assert not chain.floored and chain.per_rank_mini_batch > 0 and chain.mini_batch_remainder == 0
    assert chain.optimizer_updates_per_step * new == prompts  # U = P/M exactly


@settings(max_examples=200, deadline=None)
@given(gpus=st.sampled_from([1, 2, 4, 6, 8, 12, 16, 32, 64]), tp=st.integers(1, 8), pp=st.integers(1, 8),
       cp=st.integers(1, 4), ep=st.integers(1, 8), etp=st.one_of(st.none(), st.integers(1, 4)))
def test_valid_layout_means_whole_grids(gpus, tp, pp, cp, ep, etp):
    problems = {code_of(p) for p in layout_problems(Layout(gpus=gpus, tp=tp, pp=pp, cp=cp, ep=ep, etp=etp))}
    dp = derive.data_parallel_size(gpus, tp, pp, cp)
    assert ("VP301" in problems) == (dp is None)
    if not problems & {"VP301", "VP303"}:  # with EP 1 and ETP = TP, E3 is implied by E1
        edp = derive.expert_data_parallel_size(gpus, tp, pp, ep, etp)
        assert edp is not None and edp * (tp if etp is None else etp) * ep * pp == gpus
    if dp is not None:
        assert dp * tp * pp * cp == gpus


@settings(max_examples=100, deadline=None)
@given(m=st.integers(1, 512), micro=st.integers(1, 64))
def test_nearest_micro_divides(m, micro):
    new = derive.nearest_micro(m, micro)
    assert m % new == 0
    assert abs(new - micro) <= abs(m - micro) if micro > m else True


def test_tp_group_that_straddles_nodes_is_reported() -> None:
    from generator.layout.derive import Layout, layout_problems

    straddling = layout_problems(Layout(gpus=12, tp=4, gpus_per_node=6))
    assert [code_of(p) for p in straddling] == ["VP304"] and "does not divide the 6 GPUs" in straddling[0].message
    assert layout_problems(Layout(gpus=12, tp=2, gpus_per_node=6)) == []


def test_embedding_and_loss_count_as_layers_in_the_pipeline_split() -> None:
    # verl's Qwen3-235B script: 94 layers over PP8 with account_for_embedding/loss_in_pipeline_split.
    from generator.layout.derive import Layout, layout_problems
    from generator.model import find_model

    qwen3_235b = find_model("qwen3-235b-a22b")
    plain = layout_problems(Layout(gpus=32, tp=4, pp=8, ep=4, etp=1), qwen3_235b)
    assert [code_of(p) for p in plain] == ["VM805"] and "94 % 8 = 6" in plain[0].message
    counted = Layout(gpus=32, tp=4, pp=8, ep=4, etp=1, embedding_in_pipeline_split=True, loss_in_pipeline_split=True)
    assert layout_problems(counted, qwen3_235b) == []
    one_only = Layout(gpus=32, tp=4, pp=8, ep=4, etp=1, embedding_in_pipeline_split=True)
    assert "94 layers + 1 (embedding/loss) = 95" in layout_problems(one_only, qwen3_235b)[0].message


def test_the_dp_equation_is_worded_once_in_the_users_numbers():
    assert derive.dp_equation(8, 2, 1, 1) == "DP = W / (TP·PP·CP) = 8 / (2·1·1) = 4"
    assert derive.dp_equation(8, 3, 1, 1, named=False) == "W / (TP·PP·CP) = 8 / (3·1·1) = 2.66667 (not divisible)"
    assert derive.sp_dp_equation(8, 2, 4) == "DP = W / ulysses SP = 8 / 2 = 4"
    assert derive.sp_dp_equation(6, 4, None, named=False) == "W / ulysses SP = 6 / 4 = not divisible"
