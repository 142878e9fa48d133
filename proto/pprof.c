/* pprof: placeholder */
