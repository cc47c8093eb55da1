"""`hangdoctor run`: launch a job, keep its output flowing, watch its progress, and diagnose it
when it hangs or fails."""
