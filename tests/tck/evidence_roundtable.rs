//! Every verdict earned (roundtable): peers that give nothing to judge, break one rule, or conform.
