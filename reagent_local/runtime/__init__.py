"""The model runtime: the llama.cpp wrapper, aligned prefill, the GGUF model registry, prompt files."""
