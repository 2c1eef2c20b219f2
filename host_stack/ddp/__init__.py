"""PyTorch training over INA: a torch.distributed backend and a DDP communication hook
(users import them as ``inart.torch``)."""
