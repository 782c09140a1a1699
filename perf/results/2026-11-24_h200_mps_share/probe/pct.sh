#!/usr/bin/env bash
# Visible SMs under MPS for client percentages, with and without a daemon default.
for p in 1 2 3 5 7 10 12.5 13 15 17 20 25 30 33 33.4 40 45 50 55 60 66 70 75 80 90 99 100; do
  echo "pct=$p $(CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=$p .devperf/affinity)"
done
