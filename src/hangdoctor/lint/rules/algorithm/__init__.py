"""Memory and algorithm rules (HL3xx): training loops that leak autograd graphs or let
gradients explode."""
