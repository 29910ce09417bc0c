# The console's image: the web server, the Celery worker and beat (docker-compose.yml).
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    RSMQ_DATA_DIR=/data

WORKDIR /app
COPY . .
# Editable: settings find templates/ and static/ next to the code, in /app.
RUN pip install --no-cache-dir -e ".[postgres]"

# uid 185 is the user of the apache/spark image: both may write the shared lake volume.
RUN useradd --uid 185 --create-home console && mkdir -p /data && chown console /data
USER console

EXPOSE 8000
CMD ["python", "manage.py", "runserver", "0.0.0.0:8000", "--noreload", "--insecure"]
