# The console's image: the web server, the Celery worker and beat (docker-compose.yml).
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    RSMQ_DATA_DIR=/data \
    RSMQ_STATIC_ROOT=/app/staticfiles

WORKDIR /app
COPY . .
# Editable: settings find templates/ and static/ next to the code, in /app.
RUN pip install --no-cache-dir -e ".[postgres]"
# Static files with hashed, compressed names, in the image (WhiteNoise serves them).
RUN SECRET_KEY=collectstatic-only python manage.py collectstatic --noinput --verbosity 0

# uid 185 is the user of the apache/spark image: both may write the shared lake volume.
RUN useradd --uid 185 --create-home console && mkdir -p /data && chown console /data
USER console

EXPOSE 8000
# gunicorn, 2 threads in each of 4 processes (bench/serve.py); --preload: a refused setting (no
# SECRET_KEY with DEBUG off) stops it at once, in one line.
CMD ["gunicorn", "dashboard.wsgi:application", "--bind", "0.0.0.0:8000", \
     "--worker-class", "gthread", "--workers", "4", "--threads", "2", "--preload", \
     "--graceful-timeout", "10", "--no-control-socket"]
