/* npullm serve: slots, their worker threads and the bounded job queue. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve_jobs.h"

struct srv_pool {
    pthread_mutex_t mu;
    pthread_cond_t cv;  /* a job was queued, or stop */
    srv_job *head, *tail;
    int n_queued, max_queue, n_busy, stopping;
    int n;
    srv_slot **slots;
    pthread_t *threads;
    int n_threads;
    int n_ctx;
};

typedef struct {
    srv_pool *p;
    int i;
} worker_arg;

static void job_unref(srv_job *j) {
    pthread_mutex_lock(&j->mu);
    int left = --j->refs;
    pthread_mutex_unlock(&j->mu);
    if (left) return;
    srv_request_free(&j->req);
    free(j->text);
    pthread_mutex_destroy(&j->mu);
    pthread_cond_destroy(&j->cv);
    free(j);
}

/* The slot's text goes to the job; a NULL piece says the prompt is in. */
static int job_sink(void *user, const char *t, size_t n) {
    srv_job *j = user;
    int rc = 0;
    pthread_mutex_lock(&j->mu);
    if (!t) {
        j->started = 1;
    } else if (n) {
        if (j->len + n > j->cap) {
            size_t cap = (j->len + n) * 2 + 256;
            char *b = realloc(j->text, cap);
            if (!b) rc = 1;
            else j->text = b, j->cap = cap;
        }
        if (!rc) memcpy(j->text + j->len, t, n), j->len += n;
    }
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
    return rc || atomic_load(&j->cancel);
}

static int job_cancelled(void *user) { return atomic_load(&((srv_job *)user)->cancel); }

static void job_finish(srv_job *j, int rc, const srv_usage *u, const srv_error *e) {
    pthread_mutex_lock(&j->mu);
    j->rc = rc;
    if (u) j->usage = *u;
    if (rc < 0 && e) j->err = *e;
    j->slot = NULL;
    j->state = JOB_DONE;
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
}

static void *worker(void *arg) {
    worker_arg *a = arg;
    srv_pool *p = a->p;
    srv_slot *slot = p->slots[a->i];
    free(a);
    for (;;) {
        pthread_mutex_lock(&p->mu);
        while (!p->head && !p->stopping) pthread_cond_wait(&p->cv, &p->mu);
        if (p->stopping) {
            pthread_mutex_unlock(&p->mu);
            return NULL;
        }
        srv_job *j = p->head;
        p->head = j->next;
        if (!p->head) p->tail = NULL;
        p->n_queued--;
        p->n_busy++;
        pthread_mutex_unlock(&p->mu);

        int rc = 1;
        srv_usage u;
        srv_error e;
        memset(&u, 0, sizeof u);
        memset(&e, 0, sizeof e);
        if (!atomic_load(&j->cancel)) {
            pthread_mutex_lock(&j->mu);
            j->state = JOB_RUNNING;
            j->slot = slot;
            pthread_mutex_unlock(&j->mu);
            rc = srv_slot_run(slot, &j->req, job_sink, job_cancelled, j, &u, &e);
            pthread_mutex_lock(&j->mu);
            j->slot = NULL;
            pthread_mutex_unlock(&j->mu);
        }
        /* the slot is free before the client hears the answer, so its next request finds it free */
        pthread_mutex_lock(&p->mu);
        p->n_busy--;
        pthread_mutex_unlock(&p->mu);
        job_finish(j, rc, &u, &e);
        job_unref(j);
    }
}

srv_pool *srv_pool_new(const srv_slot_config *cfg, int n, int max_queue, char *err, size_t errlen) {
    srv_pool *p = calloc(1, sizeof *p);
    if (!p || !(p->slots = calloc((size_t)n, sizeof *p->slots)) ||
        !(p->threads = calloc((size_t)n, sizeof *p->threads))) {
        if (p) free(p->slots);
        free(p);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    p->n = n;
    p->max_queue = max_queue;
    for (int i = 0; i < n; i++) {
        if (!(p->slots[i] = srv_slot_new(cfg, err, errlen))) {
            srv_pool_free(p);
            return NULL;
        }
    }
    p->n_ctx = srv_slot_n_ctx(p->slots[0]);
    for (int i = 0; i < n; i++) {
        worker_arg *a = malloc(sizeof *a);
        if (a) a->p = p, a->i = i;
        if (!a || pthread_create(&p->threads[i], NULL, worker, a)) {
            free(a);
            snprintf(err, errlen, "cannot start a worker thread");
            srv_pool_free(p);
            return NULL;
        }
        p->n_threads++;
    }
    return p;
}

void srv_pool_free(srv_pool *p) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    p->stopping = 1;
    srv_job *q = p->head;
    p->head = p->tail = NULL;
    p->n_queued = 0;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->n; i++)
        if (p->slots[i]) srv_slot_cancel(p->slots[i]);
    while (q) { /* what still waits ends as cancelled */
        srv_job *next = q->next;
        job_finish(q, 1, NULL, NULL);
        job_unref(q);
        q = next;
    }
    for (int i = 0; i < p->n_threads; i++) pthread_join(p->threads[i], NULL);
    for (int i = 0; i < p->n; i++) srv_slot_free(p->slots[i]);
    free(p->slots);
    free(p->threads);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    free(p);
}

int srv_pool_n_ctx(const srv_pool *p) { return p->n_ctx; }

void srv_pool_counts(srv_pool *p, int *n_slots, int *n_busy, int *n_queued) {
    pthread_mutex_lock(&p->mu);
    *n_slots = p->n;
    *n_busy = p->n_busy;
    *n_queued = p->n_queued;
    pthread_mutex_unlock(&p->mu);
}

srv_job *srv_job_submit(srv_pool *p, srv_request *r, int *full) {
    *full = 0;
    srv_job *j = calloc(1, sizeof *j);
    if (!j) return NULL;
    pthread_mutex_init(&j->mu, NULL);
    pthread_cond_init(&j->cv, NULL);
    j->refs = 2;
    pthread_mutex_lock(&p->mu);
    /* a request waits only when every slot is busy and fewer than max_queue wait */
    if (p->stopping || p->n_queued >= p->max_queue + (p->n - p->n_busy)) {
        pthread_mutex_unlock(&p->mu);
        pthread_mutex_destroy(&j->mu);
        pthread_cond_destroy(&j->cv);
        free(j);
        *full = 1;
        return NULL;
    }
    j->req = *r;
    memset(r, 0, sizeof *r);
    if (p->tail) p->tail->next = j;
    else p->head = j;
    p->tail = j;
    p->n_queued++;
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
    return j;
}

void srv_job_abandon(srv_job *j) {
    atomic_store(&j->cancel, 1);
    pthread_mutex_lock(&j->mu);
    if (j->slot) srv_slot_cancel(j->slot); /* also stops a prefill */
    pthread_mutex_unlock(&j->mu);
    job_unref(j);
}

void srv_job_release(srv_job *j) { job_unref(j); }
