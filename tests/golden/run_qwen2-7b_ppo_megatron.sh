#!/usr/bin/env bash
# Qwen2-7B PPO on 8 GPUs (1 node x 8), Megatron actor
# Written by `gen recipe` for verl 0.9.1 (Megatron actor, vllm rollout); runs on this machine (Ray starts a local cluster)
# Reproduce: gen recipe --model qwen2-7b --gpus 8 --gpu h100 --algo ppo --prompt-len 1024 --response-len 1024 --n 1 --verl-version 0.9.1
#
# PPO: GAE advantages from a Megatron critic with the actor's layout.
#
# Derived numbers for the defaults below (`gen check` recomputes them for any values):
#   DP = GPUs / (TP*PP*CP) = 8 / (2*2*1) = 2
#   responses per step G = train_batch_size * n = 1024 * 1 = 1024
#   per-rank mini batch = ppo_mini_batch_size * n / DP = 256 * 1 / 2 = 128 responses
#   optimizer updates per step = train_batch_size / ppo_mini_batch_size * ppo_epochs = 1024 / 256 * 1 = 4
#   dynamic batch: token budget 6144 (update), 12288 (log-prob, ref); each * CP 1 >= prompt+response = 2048
#   rollout: 8 GPUs / rollout TP 4 = 2 vllm replicas, gpu_memory_utilization 0.35
#   agent loop: G / num_workers = 1024 / 8 = 128 responses per worker
#   offload: none
#   predicted memory per GPU (GiB): update 58.9, optimizer_step 52.7, log_prob 57.6, rollout 73.1, weight_sync 51.8; limit 79.6 (h100, 79.6 GiB)
#   why: DP = W / (TP·PP·CP) = 8 / (2·2·1) = 2; per-rank mini batch 256·1/2 = 128
#   why: memory relief: none needed
#   why: peak 73.1 GiB in rollout of 79.6 GiB usable
#   why: rollout TP 4: weights 3.5 GiB, KV cache 24.0 GiB per GPU
#   why: step ~44 s estimated, responses counted at 154 of 1024 tokens expected (15% of the maximum, the published median; --mean-response-len to change)

set -xeuo pipefail

# Knobs: each can be overridden from the environment, e.g. `TP=4 PP=1 bash run.sh`.
# Text values go inside Hydra single quotes: write \' for a quote.
MODEL_PATH=${MODEL_PATH:-Qwen/Qwen2-7B-Instruct}         # Hugging Face id or local directory of the model
TRAIN_FILES=${TRAIN_FILES:-"$HOME/data/gsm8k/train.parquet"}  # training data (parquet)
VAL_FILES=${VAL_FILES:-"$HOME/data/gsm8k/test.parquet"}  # validation data (parquet)
PROJECT_NAME=${PROJECT_NAME:-verl_megatron}              # logger project
EXPERIMENT_NAME=${EXPERIMENT_NAME:-qwen2-7b_ppo_megatron}  # logger run name
NNODES=${NNODES:-1}                                      # nodes
GPUS_PER_NODE=${GPUS_PER_NODE:-8}                        # GPUs per node
TP=${TP:-2}                                              # tensor parallel
PP=${PP:-2}                                              # pipeline parallel
ROLLOUT_TP=${ROLLOUT_TP:-4}                              # vllm tensor parallel
GPU_MEMORY_UTILIZATION=${GPU_MEMORY_UTILIZATION:-0.35}   # vllm KV-cache share
PARAM_OFFLOAD=${PARAM_OFFLOAD:-False}                    # params+grads to CPU between phases
OPTIMIZER_OFFLOAD=${OPTIMIZER_OFFLOAD:-False}            # Adam state to CPU between phases
TRAIN_BATCH_SIZE=${TRAIN_BATCH_SIZE:-1024}               # prompts per step
PPO_MINI_BATCH_SIZE=${PPO_MINI_BATCH_SIZE:-256}          # prompts per optimizer update
MICRO_BATCH_PER_GPU=${MICRO_BATCH_PER_GPU:-1}            # responses per forward/backward
LOG_PROB_MICRO_BATCH_PER_GPU=${LOG_PROB_MICRO_BATCH_PER_GPU:-1}  # responses per log-prob forward
N_RESPONSES=${N_RESPONSES:-1}                            # responses per prompt
MAX_PROMPT_LENGTH=${MAX_PROMPT_LENGTH:-1024}             # tokens
MAX_RESPONSE_LENGTH=${MAX_RESPONSE_LENGTH:-1024}         # tokens
ACTOR_TOKEN_BUDGET=${ACTOR_TOKEN_BUDGET:-6144}           # tokens per GPU per micro-batch (update)
LOG_PROB_TOKEN_BUDGET=${LOG_PROB_TOKEN_BUDGET:-12288}    # tokens per GPU per micro-batch (log-prob, ref)

export CUDA_DEVICE_MAX_CONNECTIONS=1  # Megatron overlaps TP communication with compute

python3 -m verl.trainer.main_ppo \
    model_engine=megatron \
    data.train_files="'${TRAIN_FILES}'" \
    data.val_files="'${VAL_FILES}'" \
    data.train_batch_size="${TRAIN_BATCH_SIZE}" \
    data.max_prompt_length="${MAX_PROMPT_LENGTH}" \
    data.max_response_length="${MAX_RESPONSE_LENGTH}" \
    data.filter_overlong_prompts=True \
    data.truncation=error \
    actor_rollout_ref.model.path="'${MODEL_PATH}'" \
    actor_rollout_ref.actor.optim.lr=1e-6 \
    actor_rollout_ref.actor.ppo_mini_batch_size="${PPO_MINI_BATCH_SIZE}" \
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu="${MICRO_BATCH_PER_GPU}" \
    actor_rollout_ref.actor.use_dynamic_bsz=True \
    actor_rollout_ref.actor.ppo_max_token_len_per_gpu="${ACTOR_TOKEN_BUDGET}" \
    actor_rollout_ref.actor.megatron.tensor_model_parallel_size="${TP}" \
    actor_rollout_ref.actor.megatron.pipeline_model_parallel_size="${PP}" \
    actor_rollout_ref.actor.megatron.param_offload="${PARAM_OFFLOAD}" \
    actor_rollout_ref.actor.megatron.optimizer_offload="${OPTIMIZER_OFFLOAD}" \
    actor_rollout_ref.actor.use_kl_loss=False \
    actor_rollout_ref.actor.entropy_coeff=0 \
    actor_rollout_ref.rollout.name=vllm \
    actor_rollout_ref.rollout.mode=async \
    actor_rollout_ref.rollout.tensor_model_parallel_size="${ROLLOUT_TP}" \
    actor_rollout_ref.rollout.gpu_memory_utilization="${GPU_MEMORY_UTILIZATION}" \
    actor_rollout_ref.rollout.n="${N_RESPONSES}" \
    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu="${LOG_PROB_MICRO_BATCH_PER_GPU}" \
    actor_rollout_ref.rollout.log_prob_max_token_len_per_gpu="${LOG_PROB_TOKEN_BUDGET}" \
    actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu="${LOG_PROB_MICRO_BATCH_PER_GPU}" \
    actor_rollout_ref.ref.log_prob_max_token_len_per_gpu="${LOG_PROB_TOKEN_BUDGET}" \
    critic.model.path="'${MODEL_PATH}'" \
    critic.optim.lr=1e-5 \
    critic.optim.lr_warmup_steps_ratio=0.0 \
    critic.ppo_micro_batch_size_per_gpu="${MICRO_BATCH_PER_GPU}" \
    critic.use_dynamic_bsz=True \
    critic.ppo_max_token_len_per_gpu="${ACTOR_TOKEN_BUDGET}" \
    critic.forward_max_token_len_per_gpu="${LOG_PROB_TOKEN_BUDGET}" \
    critic.megatron.tensor_model_parallel_size="${TP}" \
    critic.megatron.pipeline_model_parallel_size="${PP}" \
    critic.megatron.param_offload="${PARAM_OFFLOAD}" \
    critic.megatron.optimizer_offload="${OPTIMIZER_OFFLOAD}" \
    algorithm.adv_estimator=gae \
    algorithm.use_kl_in_reward=False \
    trainer.critic_warmup=0 \
    trainer.logger='[console]' \
    trainer.project_name="'${PROJECT_NAME}'" \
    trainer.experiment_name="'${EXPERIMENT_NAME}'" \
    trainer.n_gpus_per_node="${GPUS_PER_NODE}" \
    trainer.nnodes="${NNODES}" \
    trainer.save_freq=20 \
    trainer.test_freq=5 \
    trainer.total_epochs=15 \
    "$@"
