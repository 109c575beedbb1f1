//! Every verdict earned (execute_task): peers that give nothing to judge, break one rule, or conform.
