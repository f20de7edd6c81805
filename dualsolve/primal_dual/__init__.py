"""Linear primal-dual family (Wang & Xiao 2017; spec seed1): BPD / SPDC with adaptive and
dual-free variants, and the SVRG / Katyusha baselines. Work in progress: see the modules."""
