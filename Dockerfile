# hopindex: the CLI, the HTTP API and the workers in one slim, CPU-only image.
#   docker build -t hopindex:local .      (docker-compose.yml builds it for you)
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    # The embedding and NLP models ship inside PyPI packages: nothing is fetched at run time.
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1 \
    HOPINDEX_DATA_DIR=/data

# torch first, pinned to the CPU build: any other torch request pulls a multi-GB CUDA one.
RUN pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu

WORKDIR /app
# Dependencies in their own layer, so editing the code does not reinstall them.
COPY pyproject.toml README.md ./
RUN mkdir -p hopindex && touch hopindex/__init__.py \
    && pip install . && pip uninstall -y hopindex && rm -rf hopindex build
COPY hopindex ./hopindex
RUN pip install --no-deps . && rm -rf build

RUN useradd --create-home --uid 10001 hopindex \
    && mkdir -p /data && chown hopindex:hopindex /data
USER hopindex
VOLUME ["/data"]
EXPOSE 8080 9100

# Binding beyond loopback needs HOPINDEX_API_KEYS (or _FILE); docker-compose.yml sets it.
CMD ["hopindex", "serve", "--host", "0.0.0.0", "--port", "8080"]
