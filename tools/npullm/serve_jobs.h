/* npullm serve: the job queue between connections and slots (serve_jobs.c).
 * A connection submits a job and reads its text and result; a worker thread
 * per slot takes jobs in order. A job has two owners (the connection and
 * the queue/worker) and is freed by whichever lets go last. */
#ifndef NPL_SERVE_JOBS_H
#define NPL_SERVE_JOBS_H
#include <pthread.h>
#include <stdatomic.h>

#include "serve.h"

typedef enum { JOB_QUEUED = 0, JOB_RUNNING, JOB_DONE } srv_job_state;

typedef struct srv_job {
    pthread_mutex_t mu;
    pthread_cond_t cv;    /* signalled on new text, start and end */
    srv_request req;
    char *text;           /* generated text the connection has not taken yet */
    size_t len, cap;
    int started;          /* the prompt is prefilled: text follows */
    srv_job_state state;
    int rc;               /* srv_slot_run's: 0 done, 1 cancelled, -1 err */
    srv_usage usage;
    srv_error err;
    atomic_int cancel;
    int refs;
    srv_slot *slot;       /* while running, for cancel */
    struct srv_job *next;
} srv_job;

typedef struct srv_pool srv_pool;

/* n slots (each opened from cfg) and their workers; max_queue jobs may wait. */
srv_pool *srv_pool_new(const srv_slot_config *cfg, int n, int max_queue, char *err, size_t errlen);
void srv_pool_free(srv_pool *p); /* cancels what runs, fails what waits, joins the workers */
int srv_pool_n_ctx(const srv_pool *p);
void srv_pool_counts(srv_pool *p, int *n_slots, int *n_busy, int *n_queued);

/* Takes r (moved into the job). NULL when the queue is full (503) or out of
 * memory (*full says which); else the job with one reference for the caller. */
srv_job *srv_job_submit(srv_pool *p, srv_request *r, int *full);
/* Cancels the job (a disconnected client) and drops the caller's reference. */
void srv_job_abandon(srv_job *j);
/* Drops the caller's reference of a finished job. */
void srv_job_release(srv_job *j);

#endif
