# The one image of the whole stack (docker-compose.yml): the web server, the Celery
# worker and beat, and the Spark master and worker. pyspark ships Spark itself, so the
# driver (in the worker or web) and the executors (in spark-worker) run the same Spark,
# the same Python and this same project, with redis and pyarrow.
# bookworm: the Debian that still has Java 17 (Spark 4 runs on 17 or 21).
FROM python:3.11-slim-bookworm

RUN apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends openjdk-17-jre-headless \
 && rm -rf /var/lib/apt/lists/*

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    RSMQ_DATA_DIR=/data \
    RSMQ_STATIC_ROOT=/app/staticfiles \
    # The executors' Python: this image's, where the project is installed.
    PYSPARK_PYTHON=python3 \
    # A Spark worker's scratch space (its default is inside the installed pyspark).
    SPARK_WORKER_DIR=/tmp/spark-worker

WORKDIR /app
COPY . .
# Editable: settings find templates/ and static/ next to the code, in /app. The console
# and the pipeline are extras (a bare install is the client alone).
RUN pip install --no-cache-dir -e ".[console,pipeline,postgres]"
# Static files with hashed, compressed names, in the image (WhiteNoise serves them).
RUN SECRET_KEY=collectstatic-only python manage.py collectstatic --noinput --verbosity 0

# One user for every service: they share the data volume (the lake, the pipeline's
# output, beat's schedule), written by the console and read and written by executors.
RUN useradd --uid 185 --create-home console && mkdir -p /data && chown console /data
USER console

EXPOSE 8000
# granian (./run's web server, bench/serve.py): 4 processes reading requests in an event loop
# (a client trickling headers is closed after 10 s, a body is 408 after RSMQ_BODY_TIMEOUT:
# dashboard/asgi.py), each running Django in RSMQ_WEB_THREADS (2) threads. A refused
# setting (no SECRET_KEY with DEBUG off) stops it at once.
CMD ["granian", "--interface", "asgi", "dashboard.asgi:application", "--host", "0.0.0.0", \
     "--port", "8000", "--workers", "4", "--http1-header-read-timeout", "10000", "--no-ws", \
     "--loop", "uvloop", "--respawn-failed-workers", "--workers-kill-timeout", "10"]
