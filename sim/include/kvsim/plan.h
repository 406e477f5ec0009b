/* The static memory plan: what the engine prints at start-up. Per GPU rank:
 * total x utilization = weights + activation peak + non-torch [+ CUDA graphs]
 * + KV pool; the pool is cut into blocks of block_size tokens.
 * Engine rules are vLLM's: vllm/v1/worker/gpu_worker.py
 * Worker.determine_available_memory and vllm/v1/core/kv_cache_utils.py
 * get_kv_cache_configs (V1), vllm/worker/worker.py
 * Worker.determine_num_available_blocks (V0); plan.c names the versions. */
#ifndef KVSIM_PLAN_H
#define KVSIM_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kvsim/error.h"
#include "kvsim/gpu.h"
#include "kvsim/model.h"
#include "kvsim/params.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum kvsim_plan_engine {
  KVSIM_PLAN_V1 = 1, /* vLLM V1 (>= 0.9.2 memory profiling; null block; hybrid allocator) */
  KVSIM_PLAN_V0 = 0, /* vLLM V0 (0.6.5 .. end of V0) */
  KVSIM_PLAN_SGLANG = 2, /* SGLang: mem_fraction_static of the free memory before weights */
  KVSIM_PLAN_TGI = 3, /* HF text-generation-inference >= 3.0 warmup (plan_tgi.c) */
  KVSIM_PLAN_HF = 4,  /* HF Transformers cache classes, one process (plan_hf.c) */
} kvsim_plan_engine;

/* The plan engines, for comparisons that iterate over them (calc
 * --compare-engines): each with the name calc and the JSON print and a
 * profile whose plan it is. NULL-name ended. */
struct kvsim_plan_params;
struct kvsim_plan;
typedef struct kvsim_plan_engine_info {
  kvsim_plan_engine engine;
  const char *name;    /* "vllm-v1", "tgi", ... */
  const char *profile; /* the engine profile (scenario engine.profile) */
  bool compare;        /* a column of calc --compare-engines */
  /* For the comparison (NULL where the engine has none): sets the engine's
   * own memory fraction and request length; names the settings used. */
  void (*set_fraction)(struct kvsim_plan_params *p, double fraction, int64_t seq_len);
  void (*settings)(const struct kvsim_plan *pl, char *buf, size_t cap);
} kvsim_plan_engine_info_t;
extern const kvsim_plan_engine_info_t kvsim_plan_engines[];
const char *kvsim_plan_engine_name(kvsim_plan_engine e);

/* TGI's attention backends (launcher/src/main.rs resolve_attention), which
 * fix BLOCK_SIZE (server/text_generation_server/models/globals.py). */
typedef enum kvsim_tgi_attention {
  KVSIM_TGI_FLASHINFER = 0, /* default; BLOCK_SIZE 1; prefix caching */
  KVSIM_TGI_FLASHDECODING,  /* BLOCK_SIZE 256; prefix caching */
  KVSIM_TGI_PAGED,          /* BLOCK_SIZE 16; no prefix caching */
} kvsim_tgi_attention;

/* TGI launcher flags; 0 = the launcher's / warmup's default. */
typedef struct kvsim_plan_tgi_params {
  double cuda_memory_fraction;      /* (0, 1], default 1.0 */
  /* The release <major>.<minor>.<patch> whose warmup rules apply (plan_tgi.c):
   * 3.x wiggle room 0.95 (3.0), 0.93 (3.1-3.2), 0.90 (3.3+) inside the
   * fraction; 2.x the room times the free memory, 2.0.0-2.4.0 with the
   * launcher's 4096-token defaults. major 0: 3. */
  int version_major, version_minor, version_patch;
  kvsim_tgi_attention attention;
  int64_t max_input_tokens, max_total_tokens, max_batch_prefill_tokens;
  int64_t max_batch_total_tokens;   /* ignored by flash models (warning), kept for the record */
} kvsim_plan_tgi_params_t;

/* HF Transformers cache classes (src/transformers/cache_utils.py). */
typedef enum kvsim_hf_cache {
  KVSIM_HF_DYNAMIC = 0, /* DynamicCache: grows per token */
  KVSIM_HF_STATIC,      /* StaticCache: max_cache_len x batch preallocated */
  KVSIM_HF_QUANTIZED,   /* QuantizedCache (quanto): nbits + scale/zero per group + residual */
  KVSIM_HF_OFFLOADED,   /* DynamicCache(offloading=True): layers streamed from CPU */
} kvsim_hf_cache;

typedef struct kvsim_plan_hf_params {
  kvsim_hf_cache cache;
  int64_t batch;          /* 0: 1 */
  int64_t max_cache_len;  /* 0: max_model_len */
  int nbits;              /* quantized: 2 or 4 (default 4) */
  int q_group_size;       /* quantized: default 64 */
  int residual_length;    /* quantized: default 128 */
} kvsim_plan_hf_params_t;

/* Names as the engines spell them; the parsers return KVSIM_EINVAL on an
 * unknown name. "3.3" or "3.3.7": TGI 3.x, *minor = 3 (3.x only, kept for
 * its callers; kvsim_tgi_release_parse takes 2.x too). */
int kvsim_tgi_version_parse(const char *s, int *minor);
/* A modelled TGI release: "2.0" to "2.4.1" or any 3.x, with an optional
 * leading v and patch ("v2.2.0"); the patch is 0 when left out. */
int kvsim_tgi_release_parse(const char *s, int *major, int *minor, int *patch);
/* "2.2" or "2.4.1" (the patch only when not 0). */
void kvsim_tgi_release_format(int major, int minor, int patch, char *buf, size_t cap);
/* The attention backend a release's launcher picks when none is given:
 * paged before 2.3 (FLASH_DECODING=1 for flashdecoding; no flashinfer),
 * flashinfer from 2.3 (launcher/src/main.rs resolve_attention). */
kvsim_tgi_attention kvsim_tgi_default_attention(int major, int minor);
int kvsim_tgi_attention_parse(const char *s, kvsim_tgi_attention *out);
const char *kvsim_tgi_attention_name(kvsim_tgi_attention a);
int kvsim_hf_cache_parse(const char *s, kvsim_hf_cache *out);
const char *kvsim_hf_cache_name(kvsim_hf_cache c);

typedef enum kvsim_kv_dtype {
  KVSIM_KV_AUTO = 0, /* the model dtype */
  KVSIM_KV_BF16,
  KVSIM_KV_FP16,
  KVSIM_KV_FP8,      /* fp8, fp8_e4m3, fp8_e5m2, fp8_inc: 1 byte, no scales in the page */
  KVSIM_KV_INT8,     /* HF QuantizedCache style: per-group scales + residual window */
  KVSIM_KV_INT4,
} kvsim_kv_dtype;

/* Bounds of the plan parameters, checked on entry to kvsim_plan_compute.
 * Memory sizes share the GPU's bound (KVSIM_GPU_MAX_MEMORY_BYTES, 4 TiB)
 * and token counts the model's (KVSIM_MODEL_MAX_CONTEXT, 2^30). */
/* A GPU's total memory given in GiB (--gpu-memory-gib, hardware.gpu_memory_gib):
 * 1 MiB (below is not a GPU, and rounds towards 0 bytes, "the catalog's")
 * to the GPU's bound; one range, named alike by calc and run. */
#define KVSIM_GPU_MEMORY_MIN_GIB (1.0 / 1024)
#define KVSIM_GPU_MEMORY_RANGE "[1/1024, 4096]"
/* --weights-gib ... --cuda-graph-gib, --swap-space: parts of one GPU. */
#define KVSIM_PLAN_MAX_GIB 4096.0
/* --kv-offloading-size (host memory, all ranks): 16 TiB, 8x a DGX B200's. */
#define KVSIM_PLAN_MAX_HOST_GIB 16384.0
#define KVSIM_PLAN_MAX_PARALLEL KVSIM_MAX_PARALLEL /* --tensor/pipeline-parallel-size (params.h)   \
                                                    */
#define KVSIM_PLAN_MAX_SEQS (INT64_C(1) << 20) /* --max-num-seqs: 1000x the engine default 1024 */
/* Blocks of one pool (computed or --num-gpu-blocks-override): vLLM's
 * block tables hold int32 block ids (v1/worker/block_table.py), and so
 * does kvsim's pool. */
#define KVSIM_PLAN_MAX_BLOCKS INT64_C(2147483647)

/* SGLang's own launch arguments (python/sglang/srt/server_args.py
 * ServerArgs); zero / negative means the engine's automatic value. The
 * plan's shared fields carry the rest: tp, pp, kv_dtype, quantization,
 * max_model_len (--context-length), block_size (--page-size). */
typedef struct kvsim_plan_sglang_params {
  double mem_fraction_static;      /* (0, 1); <= 0: the GPU-memory heuristic */
  int64_t max_total_tokens;        /* 0: the profiled pool */
  int64_t max_running_requests;    /* 0: min(pool // 2, req_to_token size) */
  int64_t chunked_prefill_size;    /* 0: by GPU memory; -1: chunking off */
  int64_t max_prefill_tokens;      /* 0: 16384 */
  /* Measured "avail mem" (GiB) before and after weight loading; negative:
   * predicted. */
  double avail_gib_before_load, avail_gib_after_load;
  /* What get_device_memory_capacity reads for the automatic fraction:
   * nvidia-smi's memory.total in MiB, a few hundred MiB above the
   * runtime's total; <= 0: the runtime's total. */
  double gpu_memory_capacity_mib;
  /* --scheduler-recv-interval: new requests are received once every N
   * decode iterations (0 or 1: every iteration). Not a memory setting:
   * the disaggregated run's decode side reads it. */
  int64_t scheduler_recv_interval;
} kvsim_plan_sglang_params_t;

/* vLLM LoRA serving (--enable-lora; vllm/config/lora.py LoRAConfig):
 * every supported linear layer preallocates max_loras adapter slots of
 * max_lora_rank (vllm/lora/layers create_lora_weights). 0 = vLLM's
 * default. */
typedef struct kvsim_plan_lora_params {
  bool enable;              /* --enable-lora */
  int max_loras;            /* --max-loras, default 1 */
  int max_lora_rank;        /* --max-lora-rank: 1, 8, 16 (default), 32, 64, 128, 256, 320, 512 */
  int max_cpu_loras;        /* --max-cpu-loras, default max_loras (host memory only) */
  bool fully_sharded;       /* --fully-sharded-loras: A (column) and B (row) split over TP */
} kvsim_plan_lora_params_t;

/* vLLM speculative decoding (--speculative-config; vllm/config/speculative.py
 * SpeculativeConfig). The drafter's weights load with the model, its
 * attention layers join the KV cache, and the scheduler reserves
 * lookahead slots (kvsim/spec.h). */
typedef enum kvsim_spec_method {
  KVSIM_SPEC_NONE = 0,
  KVSIM_SPEC_EAGLE,       /* "eagle": EAGLE-1/2 head, target's embedding and lm_head */
  KVSIM_SPEC_EAGLE3,      /* "eagle3": EAGLE-3 head with its own lm_head (draft_vocab_size) */
  KVSIM_SPEC_MTP,         /* "mtp": the checkpoint's num_nextn_predict_layers */
  KVSIM_SPEC_NGRAM,       /* "ngram": prompt lookup, no drafter on the GPU */
  KVSIM_SPEC_DRAFT_MODEL, /* "draft_model": a whole smaller model */
} kvsim_spec_method;

/* The most draft tokens per step kvsim models (vLLM has no bound; real
 * deployments use 1-8). */
#define KVSIM_SPEC_MAX_TOKENS 16

typedef struct kvsim_plan_spec_params {
  kvsim_spec_method method;
  int num_speculative_tokens;     /* k; 0 = the drafter's n_predict (mtp) */
  char model[256];                /* the drafter: catalog name, HF id or config path */
  int draft_tensor_parallel_size; /* 0 = the target's (the only value modelled) */
  int prompt_lookup_min, prompt_lookup_max; /* ngram (default 5, 5); no memory */
  /* SGLang's EAGLE (--speculative-num-steps, --speculative-eagle-topk,
   * --speculative-num-draft-tokens; python/sglang/srt/server_args.py): the
   * draft tree's depth, its branching and the tokens the target verifies
   * per request and step; 0 = SGLang's automatic choice. The plan resolves
   * them and sets num_speculative_tokens to the depth, the most drafts a
   * step can accept. */
  int sgl_num_steps, sgl_eagle_topk, sgl_num_draft_tokens;
} kvsim_plan_spec_params_t;

/* Everything the plan depends on. Zero / negative means "engine default"
 * or "predict" as noted; kvsim_plan_params_default() fills the defaults. */
typedef struct kvsim_plan_params {
  kvsim_plan_engine engine;
  /* The vLLM release whose version-dependent sizing rules apply
   * (engine.vllm_version, calc --vllm-version), as KVSIM_VLLM_VERSION(x,
   * y, z); 0: the newest modelled for `engine` (resolved by the plan). */
  int vllm_version;
  int tp, pp;
  /* How the TP degree was given, for an engine's errors about it (calc
   * --compare-engines: "--tensor-parallel-size" for TGI too); NULL: the
   * engine's own name (TGI: "--num-shard (hardware.tensor_parallel_size)"). */
  const char *tp_flag;
  /* Expert parallelism (vLLM --enable-expert-parallel): the routed experts
   * are spread whole over `ep` ranks (ep = tp x data-parallel size)
   * instead of each being split over TP. 0 or 1: off. */
  int ep;
  double gpu_memory_utilization;   /* (0, 1] */
  int64_t total_memory_bytes;      /* 0: the GPU's */
  int64_t max_model_len;           /* 0: the model's max_position_embeddings */
  int block_size;                  /* 0: 16 */
  kvsim_kv_dtype kv_dtype;
  int kv_quant_group;              /* int8/int4 cache: elements per scale group (default 64) */
  int kv_residual_tokens;          /* int8/int4 cache: recent tokens kept unquantized (default 128) */
  char quantization[32];           /* "" keeps the model's; fp8, int8, awq, gptq, int4, mxfp4, none */
  int64_t max_num_batched_tokens;  /* 0: engine default for the GPU */
  int64_t max_num_seqs;            /* 0: engine default for the GPU */
  int enable_chunked_prefill;      /* -1: engine default (V1 on, V0 off) */
  bool disable_hybrid_kv_cache_manager;
  bool enforce_eager;
  bool estimate_cudagraphs;        /* VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS: subtract graph memory */
  /* Measured overrides in GiB; negative = predict. */
  double weights_gib, activation_gib, non_torch_gib, cuda_graph_gib;
  int64_t kv_cache_memory_bytes;   /* > 0: bypass profiling, use this budget */
  int64_t num_gpu_blocks_override; /* > 0: use this many blocks */
  /* CPU tiers in GiB, 0 = none: V0 --swap-space (per GPU) and V1
   * --kv-offloading-size (total over the TP x PP ranks). The plan sizes
   * them in blocks (swap_blocks, offload_blocks). */
  double swap_space_gib, kv_offloading_gib;
  kvsim_plan_sglang_params_t sglang; /* engine KVSIM_PLAN_SGLANG only */
  kvsim_plan_lora_params_t lora;     /* vLLM engines only */
  kvsim_plan_spec_params_t spec;     /* vllm-v1 only */
  /* Engines other than vLLM: their own settings (read by their plan). */
  kvsim_plan_tgi_params_t tgi;
  kvsim_plan_hf_params_t hf;
} kvsim_plan_params_t;

/* What SGLang logs at start-up (ModelRunner.init_memory_pool,
 * MHATokenToKVPool, TpModelWorker), filled for KVSIM_PLAN_SGLANG. */
typedef struct kvsim_plan_sglang {
  double mem_fraction_static;      /* resolved */
  bool fraction_auto;              /* from _handle_gpu_memory_settings */
  double reserved_mb;              /* that heuristic's reserve */
  int64_t cuda_graph_max_bs;
  double avail_gib_before_load, avail_gib_after_load; /* min over ranks */
  double rest_gib;                 /* after - before x (1 - fraction) */
  int64_t cell_size;               /* bytes per token per rank, K and V (or the MLA latent) */
  int64_t k_size_bytes, v_size_bytes; /* logged K / V (or KV, MLA) sizes, incl. the padded page */
  int64_t profiled_tokens;         /* before --max-total-tokens and page rounding */
  int64_t max_total_num_tokens;
  int64_t req_to_token_size;       /* max_num_reqs of ReqToTokenPool */
  int64_t max_running_requests;
  int64_t chunked_prefill_size, max_prefill_tokens;
  int64_t context_len, max_req_input_len;
  /* EAGLE (memory/spec_sglang.c): the draft pool's logged K / V sizes
   * (its layers over the target's token indices) and the slots one
   * request may take in a decode step (get_alloc_len_per_decode). */
  int64_t draft_k_size_bytes, draft_v_size_bytes, alloc_len_per_decode;
} kvsim_plan_sglang_t;

/* TGI's warmup results (flash_causal_lm.py FlashCausalLM.warmup). */
typedef struct kvsim_plan_tgi {
  double wiggle_room;              /* TGI_WIGGLE_ROOM of the version */
  int64_t block_size;              /* BLOCK_SIZE of the attention backend */
  int64_t num_blocks;              /* "KV-cache blocks: N, size: B" */
  int64_t max_batch_total_tokens;  /* num_blocks x BLOCK_SIZE */
  int64_t max_input_tokens, max_total_tokens, max_batch_prefill_tokens;
  int64_t warmup_blocks;           /* the warmup batch's blocks, added back */
  int64_t warmup_requests;         /* requests of the warmup batch */
  int64_t prefill_logits_bytes;    /* 2.x: the warmup's prefill-logprob logits (+ forward = peak) */
  bool room_on_free;               /* 2.x: blocks = room x (free - (1 - fraction) x total) */
  bool launcher_fixed_defaults;    /* 2.0.0-2.4.0: input/total/prefill from the 4096 cap */
  bool input_defaulted, total_defaulted; /* that launcher filled them ("Default `...` to") */
  bool prefix_caching;             /* the backend allows it */
  bool total_tokens_flag_ignored;  /* --max-batch-total-tokens given: flash models ignore it */
} kvsim_plan_tgi_t;

/* HF cache memory: the seeds' 2 x B x L x T x Hkv x D x S plus what the
 * class adds. */
typedef struct kvsim_plan_hf {
  int64_t kv_bytes;        /* the formula's bytes at T = max_cache_len (sliding layers: the window) */
  int64_t scale_bytes;     /* quantized: scales and zero points at T */
  int64_t residual_bytes;  /* quantized: residual_length tokens in the model dtype */
  int64_t gpu_bytes;       /* what sits on the GPU (offloaded: two layers) */
  int64_t host_bytes;      /* offloaded: the rest, in CPU memory */
  int64_t per_token_bytes; /* one token of one sequence, all layers, as stored */
} kvsim_plan_hf_t;

/* One KV cache group of the V1 hybrid allocator: layers of one attention
 * type that share a block table. Full-attention models have one group. */
typedef struct kvsim_plan_group {
  bool sliding;
  int64_t window;        /* tokens (sliding groups) */
  int num_layers;        /* real layers in the group */
} kvsim_plan_group_t;

#define KVSIM_PLAN_MAX_GROUPS 16

typedef struct kvsim_plan {
  kvsim_plan_params_t p;      /* resolved parameters (defaults filled in) */
  /* KV geometry on the binding rank. */
  int num_layers;             /* attention layers holding KV on that rank */
  int64_t kv_heads_per_rank, head_dim;
  double kv_bytes_per_element;
  int64_t per_token_kv_bytes; /* all layers of the rank; with scales for int8/int4 */
  int64_t block_bytes;        /* one block across all layers of the rank (V1 hybrid: group_size layers) */
  int64_t page_bytes;         /* one block of one layer */
  /* Memory (bytes, per rank). */
  int64_t total_memory_bytes, requested_bytes, weights_bytes, activation_bytes,
      non_torch_bytes, cuda_graph_bytes, available_kv_bytes;
  bool cuda_graph_subtracted;
  int64_t lora_bytes;         /* --enable-lora: the adapter slots, inside weights_bytes */
  /* --speculative-config: the drafter's weights (inside weights_bytes),
   * its attention layers on this rank, their bytes per block (inside
   * block_bytes) and per token (inside per_token_kv_bytes), and the slots
   * the scheduler reserves past each running request. SGLang's EAGLE
   * draft loads after the target's pool and has a pool of its own: its
   * weights and per-token bytes are outside weights_bytes and
   * per_token_kv_bytes (plan.sglang's draft_* sizes). */
  int64_t spec_weights_bytes;
  int spec_draft_layers;
  int64_t spec_block_bytes, spec_per_token_bytes;
  int num_lookahead_tokens;
  bool spec_embed_shared, spec_lm_head_shared;
  /* Pool. */
  int64_t num_gpu_blocks;     /* as logged; V1 includes the null block 0 */
  int64_t kv_cache_tokens;    /* "GPU KV cache size: N tokens" */
  double max_concurrency;     /* "Maximum concurrency for L tokens per request: X" */
  int64_t blocks_per_request_max; /* blocks one max_model_len request needs (V1) */
  int num_groups, group_size;
  kvsim_plan_group_t groups[KVSIM_PLAN_MAX_GROUPS];
  int binding_stage;
  /* int8/int4 caches: the scale/zero-point bytes inside per_token_kv_bytes,
   * and the unquantized residual window each request holds. */
  int64_t kv_scale_bytes_per_token;
  int64_t residual_bytes_per_request;
  /* Verdict. */
  bool fits;
  char error[512];            /* the engine's own error text when !fits */
  int64_t max_model_len_fit;  /* largest max_model_len that fits, 0 if none */
  /* CPU tiers: V0 num_cpu_blocks = swap_space // block_bytes; V1
   * CPUOffloadingSpec: kv_offloading_size // (block_bytes x world size). */
  int64_t swap_blocks, offload_blocks;
  kvsim_plan_sglang_t sglang;  /* engine KVSIM_PLAN_SGLANG only */
  kvsim_plan_tgi_t tgi; /* engine TGI */
  kvsim_plan_hf_t hf;   /* engine HF */
} kvsim_plan_t;

void kvsim_plan_params_default(kvsim_plan_params_t *p);

/* vLLM release X.Y.Z as one comparable number. */
#define KVSIM_VLLM_VERSION(x, y, z) ((x) * 10000 + (y) * 100 + (z))
/* Parses "0.11.0", "v0.6.5", "0.9" (patch 0) and release suffixes
 * ("0.6.4.post1", "0.10.1rc1", "0.11.0+cu128"); each part in [0, 99].
 * Returns KVSIM_OK and sets *out, or KVSIM_EINVAL. */
int kvsim_vllm_version_parse(const char *s, int *out);
/* The same, failing with "WHERE: 'S' is not a vLLM release X.Y.Z
 * (modelled: ...)" naming the key or flag `where`. */
int kvsim_plan_parse_version(const char *s, const char *where, int *out, kvsim_err *err);
/* "0.11.0" into buf[cap]. */
void kvsim_vllm_version_format(int version, char *buf, size_t cap);
/* The newest release whose rules are modelled for an engine (the default). */
int kvsim_plan_version_newest(kvsim_plan_engine e);
/* The modelled releases of an engine, for messages ("0.8.0 to 0.20.x"). */
void kvsim_plan_versions_modelled(kvsim_plan_engine e, char *buf, size_t cap);
/* What a release changes in the plan, one phrase naming the vLLM PR, or
 * NULL when the release is not modelled for that engine. */
const char *kvsim_plan_version_rules(kvsim_plan_engine e, int version);

/* SGLang's automatic --mem-fraction-static for a GPU of gpu_mem_mb MiB at
 * tp x pp (ServerArgs._handle_gpu_memory_settings), with the reserve and
 * the chunked_prefill_size / cuda_graph_max_bs it picks on the way
 * (chunked_prefill_size given > 0 or -1 is kept). */
double kvsim_plan_sglang_auto_fraction(double gpu_mem_mb, int tp, int pp,
                                       int64_t *chunked_prefill_size, int64_t max_prefill_tokens,
                                       int64_t *cuda_graph_max_bs, double *reserved_mb);

/* Parses "auto", "bfloat16", "fp8_e4m3", "int4", ... Returns <0 if unknown. */
int kvsim_kv_dtype_parse(const char *s, kvsim_kv_dtype *out);
const char *kvsim_kv_dtype_name(kvsim_kv_dtype d);

/* Computes the plan into *out. Fails (KVSIM_EINVAL) only on invalid
 * parameters: every parameter is range-checked on entry, and the message
 * names it by its vLLM flag and scenario key with the allowed range
 * ("--swap-space (swap_space): 1e+12 GiB is out of range [0, 4096]"); TP
 * that does not divide the heads; or byte and block counts that would
 * overflow int64 (all of that arithmetic is checked). A plan that does not
 * fit is a successful result with fits = false. */
int kvsim_plan_compute(const kvsim_model_t *m, const kvsim_gpu_t *g,
                       const kvsim_plan_params_t *p, kvsim_plan_t *out, kvsim_err *err);

/* For a plan that does not fit: the single changes that would make it fit
 * ("max_model_len <= 12,288; or kv_cache_dtype fp8; or ..."), each
 * checked by computing its plan, named by the engine's own keys (TGI:
 * max_total_tokens, cuda_memory_fraction). Empty for TGI when no change
 * applies (its token limits contradict each other). */
void kvsim_plan_advice(const kvsim_model_t *m, const kvsim_gpu_t *g, const kvsim_plan_t *pl,
                       char *buf, size_t cap);

/* Blocks of the pool that a request with `tokens` tokens of context holds
 * (sum over KV groups; sliding groups hold only the window). */
int64_t kvsim_plan_blocks_for_tokens(const kvsim_plan_t *pl, int64_t tokens);

/* Reverse mode: what `concurrency` requests of `seq_len` tokens need.
 * concurrency in [1, 2^30], seq_len in [0, KVSIM_MODEL_MAX_CONTEXT]; a
 * requirement past 2^63 bytes is KVSIM_EINVAL, as are kvsim_plan_compute's
 * parameter errors.
 *
 * The layouts tried are those of the given GPU: TP degrees 1, 2, 4, .., 64
 * (those the model's heads allow) times replicas (data parallel: each
 * replica holds its share of the requests), at the given PP. The answer is
 * the fewest GPUs; among layouts of that count, the smallest TP (more
 * replicas, less TP traffic).
 *
 * seq_len 0 asks the other question: the longest max_model_len that
 * `concurrency` requests fit in at the plan's TP (max_seq_len); the byte
 * fields then describe requests of that length. */
typedef struct kvsim_plan_reverse {
  int64_t seq_len;               /* the length the fields describe (given, or max_seq_len) */
  int64_t required_kv_bytes;     /* per rank at the plan's TP */
  int64_t required_memory_bytes; /* per GPU, before utilization: what total memory must be */
  int min_gpus;                  /* fewest GPUs of a layout that fits, -1 if none */
  int layout_tp, layout_replicas;/* that layout: min_gpus = layout_tp x PP x layout_replicas */
  int64_t per_replica;           /* requests one replica of that layout holds */
  int min_tp;                    /* smallest TP degree holding them all in one replica, -1 if none <= 64 */
  int64_t max_seq_len;           /* seq_len 0: longest length they fit in at the plan's TP, 0 if none */
} kvsim_plan_reverse_t;

int kvsim_plan_reverse(const kvsim_model_t *m, const kvsim_gpu_t *g,
                       const kvsim_plan_params_t *p, int64_t concurrency, int64_t seq_len,
                       kvsim_plan_reverse_t *out, kvsim_err *err);

/* Reverse mode's answer in one sentence for `concurrency` requests on GPU
 * `gpu` ("2 x h100-sxm as 2 replicas of TP 1, 54 requests each"), written
 * to buf[cap]; the same sentence stands in for the plan's "To fit:" advice
 * in reverse mode, so that calc gives one answer. */
void kvsim_plan_reverse_answer(const kvsim_plan_reverse_t *r, const char *gpu, int pp,
                               int64_t concurrency, char *buf, size_t cap);

/* calc --compare-engines: each plan engine's pool for one model, GPU,
 * memory fraction and request length. */
typedef struct kvsim_plan_compare_row {
  const kvsim_plan_engine_info_t *engine;
  int rc;                  /* KVSIM_OK, or the engine's parameter error (in error) */
  char error[256];
  kvsim_plan_t plan;       /* the engine's plan (rc == KVSIM_OK) */
  char settings[160];      /* the engine's own settings, named as it names them */
} kvsim_plan_compare_row_t;

/* Fills rows[0..*n) (at most cap) with every engine marked `compare`, each
 * from `base` with its own fraction set; seq_len in [1, 2^30]. Fails only
 * on a bad fraction or length (KVSIM_EINVAL). */
int kvsim_plan_compare(const kvsim_model_t *m, const kvsim_gpu_t *g, const kvsim_plan_params_t *base,
                       double fraction, int64_t seq_len, kvsim_plan_compare_row_t *rows, int cap,
                       int *n, kvsim_err *err);

#define KVSIM_GIB 1073741824.0

#ifdef __cplusplus
}
#endif

#endif
