//! Every verdict earned (agent_standard): peers that give nothing to judge, break one rule, or conform.
