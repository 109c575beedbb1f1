//! Every verdict earned (librarian): peers that give nothing to judge, break one rule, or conform.
