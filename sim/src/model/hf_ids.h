/* The catalog model whose listed Hugging Face repository is `hf_id`
 * ("mistralai/Mixtral-8x7B-Instruct-v0.1" or just its name, any case), or
 * NULL. Exact ids first: the suffix stripping of kvsim_model_catalog_name
 * cannot reach names with a release tag after the variant. */
#ifndef KVSIM_MODEL_HF_IDS_H
#define KVSIM_MODEL_HF_IDS_H

const char *kvsim__model_of_hf_id(const char *hf_id);

#endif
