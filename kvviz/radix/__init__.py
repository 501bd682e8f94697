"""SGLang's RadixCache and HiRadixCache node by node: the trees, their event log, scripted scenarios, RadixAttention's scheduling policies, the page's report and figures."""
