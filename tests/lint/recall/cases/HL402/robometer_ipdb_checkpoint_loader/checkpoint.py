# case: HL402 real https://github.com/robometer/robometer/pull/19
# An ipdb breakpoint was left in the checkpoint loader's error path: remote training and
# smoke runs stopped there waiting for a debugger session.
import logging

import torch

logger = logging.getLogger(__name__)


def load_progress_head(model, path):
    state = torch.load(path, map_location="cpu")
    try:
        model.progress_head.load_state_dict(state["progress_head"])
    except Exception as error:
        logger.error("could not load progress head weights: %s", error)
        import ipdb; ipdb.set_trace()  # expect: HL402
    return model
