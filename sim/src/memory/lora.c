/* vLLM's LoRA adapter slots. With --enable-lora the LoRA model manager
 * wraps every supported linear layer and each wrapper preallocates, in
 * create_lora_weights (vllm/lora/layers/base_linear.py,
 * column_parallel_linear.py, row_parallel_linear.py), for each of its
 * n_slices:
 *   lora_a_stacked: [max_loras, 1, a_out, input_size]
 *   lora_b_stacked: [max_loras, 1, b_out, max_lora_rank]
 * in lora_dtype ("auto": the model dtype, vllm/config/lora.py). On a
 * Llama-style decoder layer the wrapped layers are
 *   qkv_proj     MergedQKVParallelLinearWithLoRA, 3 slices: A [r, hidden]
 *                each; B [q heads/tp x head_dim, r] and twice
 *                [KV heads per rank x head_dim, r];
 *   o_proj       RowParallelLinearWithLoRA: A [r, q_size/tp], B [hidden, r];
 *   gate_up_proj MergedColumnParallelLinearWithLoRA, 2 slices: A [r,
 *                hidden], B [intermediate/tp, r] each;
 *   down_proj    RowParallelLinearWithLoRA: A [r, intermediate/tp],
 *                B [hidden, r].
 * --fully-sharded-loras splits the column layers' A (a_out = r / tp) and
 * the row layers' B (b_out = hidden / tp). The tensors are created while
 * the model loads (GPUModelRunner.load_model -> load_lora_model), so vLLM's
 * "Model loading took" includes them and they come out of the KV budget
 * like weights. --max-cpu-loras sizes a host-side cache only.
 * Not modelled: LoRA on MoE experts (vllm/lora/layers/fused_moe.py), MLA
 * projections, embeddings and lm_head, and the punica kernels' small
 * metadata and shrink buffers. */
#include "memory/lora.h"

#include "core/arith.h"

/* vllm/config/lora.py MaxLoRARanks. */
static const int ranks[] = {1, 8, 16, 32, 64, 128, 256, 320, 512};

/* The slot bound is the registry's (kvsim/params.h KVSIM_MAX_LORAS). */
#define MAX_LORAS KVSIM_MAX_LORAS

int kvsim__lora_resolve(const kvsim_model_t *m, kvsim_plan_params_t *p, kvsim_err *err) {
  kvsim_plan_lora_params_t *l = &p->lora;
  if (!l->enable) {
    if (l->max_loras || l->max_lora_rank || l->max_cpu_loras || l->fully_sharded)
      return kvsim_err_set(err, KVSIM_EINVAL,
                           "--max-loras, --max-lora-rank, --max-cpu-loras and "
                           "--fully-sharded-loras need --enable-lora (engine.enable_lora)");
    return KVSIM_OK;
  }
  if (l->max_loras == 0)
    l->max_loras = 1;
  if (l->max_lora_rank == 0)
    l->max_lora_rank = 16;
  if (l->max_loras < 1 || l->max_loras > MAX_LORAS)
    return kvsim_err_set_param(err, KVSIM_EINVAL, KVSIM_PARAM_MAX_LORAS,
                               "--max-loras (engine.max_loras)", "%d is out of range [1, %d]",
                               l->max_loras, MAX_LORAS);
  bool known = false;
  for (size_t i = 0; i < sizeof ranks / sizeof *ranks; i++)
    known = known || l->max_lora_rank == ranks[i];
  if (!known)
    return kvsim_err_set_param(err, KVSIM_EINVAL, KVSIM_PARAM_MAX_LORA_RANK,
                               "--max-lora-rank (engine.max_lora_rank)",
                               "%d is not one of vLLM's ranks "
                               "(1, 8, 16, 32, 64, 128, 256, 320, 512)",
                               l->max_lora_rank);
  /* LoRAConfig._validate_lora_config. */
  if (l->max_cpu_loras == 0)
    l->max_cpu_loras = l->max_loras;
  if (l->max_cpu_loras < l->max_loras || l->max_cpu_loras > MAX_LORAS)
    return kvsim_err_set_param(err, KVSIM_EINVAL, KVSIM_PARAM_MAX_CPU_LORAS,
                               "--max-cpu-loras (engine.max_cpu_loras)",
                               "%d must be >= max_loras (%d) "
                               "and <= %d",
                               l->max_cpu_loras, l->max_loras, MAX_LORAS);
  /* vllm/distributed/utils.py divide: the sharded dimension must split. */
  if (l->fully_sharded && l->max_lora_rank % p->tp)
    return kvsim_err_set_param(err, KVSIM_EINVAL, KVSIM_PARAM_FULLY_SHARDED_LORAS,
                               "--fully-sharded-loras",
                               "max_lora_rank %d is not divisible by the TP "
                               "degree %d",
                               l->max_lora_rank, p->tp);
  if (m->mla || m->num_moe_layers > 0)
    return kvsim_err_set_param(err, KVSIM_EINVAL, KVSIM_PARAM_ENABLE_LORA, "--enable-lora",
                               "LoRA on %s layers is not modelled (dense attention and "
                               "MLP only)",
                               m->mla ? "MLA" : "MoE");
  return KVSIM_OK;
}

int64_t kvsim__lora_bytes(const kvsim_model_t *m, const kvsim_plan_params_t *p, int stage) {
  const kvsim_plan_lora_params_t *l = &p->lora;
  if (!l->enable)
    return 0;
  int first, last;
  kvsim_model_pp_layers(m->num_layers, p->pp, stage, &first, &last);
  const double r = l->max_lora_rank, tp = p->tp, h = (double)m->hidden_size;
  const double a_col = l->fully_sharded ? r / tp : r;     /* column layers' A rows */
  const double b_row = l->fully_sharded ? h / tp : h;     /* row layers' B rows */
  const double q = (double)(m->num_heads * m->head_dim) / tp;
  const double kv = (double)(kvsim_model_kv_heads_per_rank(m, p->tp) * m->head_dim);
  const double inter = (double)m->intermediate_size / tp;
  double per_layer = 3 * a_col * h + (q + 2 * kv) * r /* qkv_proj */
                     + r * q + b_row * r              /* o_proj */
                     + 2 * a_col * h + 2 * inter * r  /* gate_up_proj */
                     + r * inter + b_row * r;         /* down_proj */
  double bytes = per_layer * (double)(last - first) * l->max_loras * m->dtype_bytes;
  int64_t out = 0;
  return kvsim__double_to_i64(bytes, &out) ? out : INT64_MAX;
}
