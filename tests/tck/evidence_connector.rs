//! Every verdict earned (connector): peers that give nothing to judge, break one rule, or conform.
