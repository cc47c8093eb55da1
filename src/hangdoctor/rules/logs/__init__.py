"""Rules that diagnose from log lines alone: the job's output (training, torchrun, NCCL, gloo)
and the kernel log. They serve `hangdoctor analyze train.log dmesg.txt ...` for a past failure,
and `hangdoctor run`, whose bundles carry the same two kinds of lines.

One module per domain: `process` (HD150), `data` (HD250-HD251), `distributed` (HD350-HD353),
`gpu` (HD450), `environment` (HD550-HD552), `algorithm` (HD650); `common` holds what they share.
"""
