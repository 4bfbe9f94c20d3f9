# Production image: slim Python, non-root user, gunicorn; static files collected at build time.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PROMETHEUS_MULTIPROC_DIR=/tmp/prometheus

WORKDIR /app
COPY requirements.txt .
RUN pip install -r requirements.txt

COPY . .
RUN SECRET_KEY=collectstatic-only python manage.py collectstatic --noinput \
    && useradd --create-home --uid 10001 app \
    && mkdir -p /app/var && chown -R app /app/var
USER app
RUN mkdir -p /tmp/prometheus

EXPOSE 8000
# Four sync workers with persistent DB connections (CONN_MAX_AGE) and one Redis pool each.
# Sync workers need a buffering proxy in front (gunicorn's deployment guide): docker-compose.yml
# publishes only nginx (deploy/nginx/default.conf.template), never this port. compose runs
# this command twice: `web` (the admin pool) and `webhooks` (the pool nginx sends webhooks to).
CMD ["gunicorn", "elbkerzen.wsgi:application", "--bind", "0.0.0.0:8000", "--workers", "4", \
     "--access-logfile", "-", "--timeout", "30"]
