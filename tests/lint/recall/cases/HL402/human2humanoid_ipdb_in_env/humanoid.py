# case: HL402 real https://github.com/LeCAR-Lab/human2humanoid/pull/22
# An ipdb line left active in the simulation environment used for training (the PR
# commented it out).
import torch


class HumanoidEnv:
    def __init__(self, num_envs):
        self.num_envs = num_envs

    def compute_reward(self, obs):
        reward = torch.zeros(self.num_envs)
        if torch.isnan(obs).any():
            import ipdb
            ipdb.set_trace()  # expect: HL402
        return reward
