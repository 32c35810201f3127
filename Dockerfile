# A Foundry hosted-agent container serving a checkflow workflow over the Responses protocol
# (docs/adapters/foundry.md, "Building and deploying the container"). Build from the
# repository root: docker build -t my-agent .
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PORT=8088

WORKDIR /app
COPY pyproject.toml README.md LICENSE MANIFEST.in CHANGELOG.md ./
COPY checkflow ./checkflow
RUN pip install ".[foundry]"

# The workflow to serve: replace samples/ (and the target in CMD) with your own module.
COPY samples ./samples

RUN useradd --create-home --uid 10001 agent && mkdir /data && chown agent /data
USER agent

EXPOSE 8088
CMD ["python", "-m", "checkflow", "serve", "samples.approval:workflow", "--foundry", "--adapters", "foundry", "--storage", "file:/data"]
