/*
 * libprofd-agent: continuous CPU profiling of the process it lives in.
 * Samples all threads (per-thread CPU-time timers and a real-time signal,
 * never SIGPROF) for a window (default 10 s) every period
 * (default 60 s, jittered), builds a symbolized pprof profile on its own
 * thread and uploads it to a profd collector (POST /api/0/profiles).
 *
 * Link it and call profd_agent_start(), or load it into an unmodified
 * program: LD_PRELOAD=libprofd-agent.so PROFD_SERVICE=name ... (see
 * agent/README.md for the environment variables).
 */
#ifndef PROFD_AGENT_H
#define PROFD_AGENT_H

#ifdef __cplusplus
extern "C" {
#endif

struct profd_agent_config {
	const char	*collector_url;	/* NULL: "http://127.0.0.1:10100";
					   https:// reads PROFD_CA_FILE,
					   PROFD_CERT_FILE, PROFD_KEY_FILE
					   from the environment */
	const char	*service;	/* required */
	const char	*labels;	/* "k=v,k=v" or NULL */
	const char	*token;		/* sent as "Authorization: Bearer" */
	int		 hz;		/* samples per second; 0: 100 */
	int		 window_sec;	/* sampling window; 0: 10 */
	int		 period_sec;	/* one window each period; 0: 60 */
	int		 queue_max;	/* profiles kept while the collector
					   is away; 0: 8 */
	const char	*output_dir;	/* debug: also write each profile
					   here as SERVICE-cpu-PID-N.pb.gz */
	int		 no_upload;	/* debug: write files only */
	int		 verbose;	/* log each profile and upload */
	int		 signal;	/* real-time signal for sampling;
					   0: SIGRTMAX-4 */
	int		 exit_timeout_ms; /* at stop or exit, wait at most this
					   long for the last uploads; 0: 200,
					   -1: do not wait */
};

/*
 * Starts the agent thread. Returns 0, or -1 with *errstr (if errstr is not
 * NULL) set to a reason the caller frees; the process is left untouched on
 * failure (the program handles the agent's signal, bad config, agent
 * already running).
 */
int	profd_agent_start(const struct profd_agent_config *, char **errstr);

/*
 * Stops sampling, turns the current window into a profile (if it has
 * samples) and uploads what is queued for up to exit_timeout_ms (default
 * 200 ms), then stops the agent thread. Also runs at exit. Safe to call
 * when the agent is not running.
 */
void	profd_agent_stop(void);

#ifdef __cplusplus
}
#endif

#endif
