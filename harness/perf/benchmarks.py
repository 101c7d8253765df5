"""What the performance suite measures: workloads where PyTorch's Python layer matters.

Each benchmark is a `setup()` that builds its inputs once per worker process and returns the body,
one iteration of the workload; `suite.py` times `loops` calls of the body with pyperf. Tensors are
tiny on purpose: the kernels take microseconds, so the time that remains is Python (module
dispatch, optimizer loops, graph bookkeeping, tracing), which is what a Python JIT can change.

Torch is imported inside each `setup()`, never at module level: the pure-Python calibration
benchmarks start their pyperf worker processes without paying for `import torch` (seconds here).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

Body = Callable[[], object]

TORCH = "torch"
CALIBRATION = "calibration"


@dataclass(frozen=True)
class Benchmark:
    """One named workload; `tag` groups it for the geometric means (torch or calibration)."""

    name: str
    tag: str
    setup: Callable[[], Body]

    @property
    def description(self) -> str:
        """First line of the setup's docstring: what the benchmark measures."""
        return (self.setup.__doc__ or "").strip().splitlines()[0]


def _torch() -> object:
    import torch

    torch.set_num_threads(1)  # tiny tensors; a 2-core machine shared with others: no intra-op threads
    torch.manual_seed(0)
    return torch


def module_call() -> Body:
    """nn.Module call overhead: forward of 4 residual blocks (Linear 16, LayerNorm) on one 16-vector."""
    torch = _torch()
    nn = torch.nn

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.linear = nn.Linear(16, 16)
            self.norm = nn.LayerNorm(16)

        def forward(self, x):
            return x + torch.relu(self.norm(self.linear(x)))

    model = nn.Sequential(*(Block() for _ in range(4))).eval()
    x = torch.randn(1, 16)

    def body() -> object:
        with torch.no_grad():
            return model(x)

    return body


def optimizer_step() -> Body:
    """Optimizer step loop: Adam (foreach=False, its per-parameter Python loop) over 12 small tensors."""
    torch = _torch()
    model = torch.nn.Sequential(*(torch.nn.Linear(8, 8) for _ in range(6)))
    for parameter in model.parameters():
        parameter.grad = torch.randn_like(parameter) * 1e-3
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4, foreach=False)

    def body() -> object:
        optimizer.step()
        return optimizer

    return body


def autograd_small_graph() -> Body:
    """Autograd on a small graph: build a 24-op graph on 4x4 tensors, then backward()."""
    torch = _torch()
    weight = torch.randn(4, 4, requires_grad=True)
    x = torch.randn(4, 4)

    def body() -> object:
        y = x
        for _ in range(6):
            y = torch.tanh(y @ weight) * 0.5 + y.sigmoid()
        y.sum().backward()
        weight.grad = None
        return y

    return body


def fx_trace() -> Body:
    """torch.fx tracing: symbolic_trace of a 6-layer residual MLP into a GraphModule (codegen included)."""
    torch = _torch()
    import torch.fx

    class Net(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layers = torch.nn.ModuleList(torch.nn.Linear(16, 16) for _ in range(6))
            self.norm = torch.nn.LayerNorm(16)

        def forward(self, x):
            for layer in self.layers:
                x = torch.relu(layer(x)) + x
            return self.norm(x)

    net = Net()

    def body() -> object:
        return torch.fx.symbolic_trace(net)

    return body


def dynamo_trace() -> Body:
    """Dynamo tracing time: torch.compile (backend "eager", no codegen) of a 14-op function, first call."""
    torch = _torch()
    import torch._dynamo

    def function(x, y):
        z = torch.sin(x) + y
        for _ in range(4):
            z = torch.relu(z @ y) * 0.5 + x
        return z.sum()

    x, y = torch.randn(8, 8), torch.randn(8, 8)

    def body() -> object:
        torch._dynamo.reset()  # forget the previous trace: every call traces and builds guards again
        return torch.compile(function, backend="eager", fullgraph=True)(x, y)

    return body


def dataloader_collate() -> Body:
    """DataLoader collate loop: one epoch of 256 dict samples, batch 16, num_workers=0, default_collate."""
    torch = _torch()
    from torch.utils.data import DataLoader, Dataset

    class Samples(Dataset):
        def __init__(self) -> None:
            self.features = torch.randn(256, 8)

        def __len__(self) -> int:
            return 256

        def __getitem__(self, index: int) -> dict:
            return {"x": self.features[index], "label": index % 10, "name": f"s{index}"}

    loader = DataLoader(Samples(), batch_size=16, shuffle=False, num_workers=0)

    def body() -> object:
        return [batch["label"] for batch in loader]

    return body


def py_float_arithmetic() -> Body:
    """Pure Python calibration: n-body style float arithmetic on lists of 5 bodies (no torch)."""
    bodies = [[float(i), float(i * 2), float(i * 3), 0.1 * i, 0.2, 0.3, 1.0 + i] for i in range(5)]
    pairs = [(a, b) for i, a in enumerate(bodies) for b in bodies[i + 1:]]

    def body() -> object:
        for _ in range(10):
            for a, b in pairs:
                dx, dy, dz = a[0] - b[0], a[1] - b[1], a[2] - b[2]
                magnitude = 0.01 / ((dx * dx + dy * dy + dz * dz + 0.01) ** 1.5)
                a[3] -= dx * b[6] * magnitude
                b[3] += dx * a[6] * magnitude
            for item in bodies:
                item[0] += 0.01 * item[3]
        return bodies

    return body


def py_method_calls() -> Body:
    """Pure Python calibration: method calls and attribute access on small objects (richards style)."""

    class Counter:
        def __init__(self) -> None:
            self.value = 0

        def step(self, amount: int) -> int:
            self.value += amount
            return self.value

    class Task:
        def __init__(self, counter: Counter, weight: int) -> None:
            self.counter = counter
            self.weight = weight

        def run(self) -> int:
            return self.counter.step(self.weight) & 0xFFFF

    tasks = [Task(Counter(), weight) for weight in range(1, 9)]

    def body() -> object:
        total = 0
        for _ in range(25):
            for task in tasks:
                total += task.run()
        return total

    return body


def py_generators_closures() -> Body:
    """Pure Python calibration: generator pipelines and closures (the patterns of docs/background.md §3)."""

    def scale(factor: int) -> Callable[[int], int]:
        return lambda value: value * factor

    def numbers(count: int):
        yield from range(count)

    def pipeline(count: int, transform: Callable[[int], int]) -> int:
        return sum(transform(value) for value in numbers(count) if value % 3)

    double = scale(2)

    def body() -> object:
        return pipeline(200, double)

    return body


def py_dict_strings() -> Body:
    """Pure Python calibration: dict and str work (split, format, count): runtime-bound, little for a JIT."""
    words = ("alpha beta gamma delta epsilon zeta eta theta iota kappa " * 4).split()

    def body() -> object:
        counts: dict[str, int] = {}
        for index, word in enumerate(words):
            key = f"{word}:{index % 7}"
            counts[key] = counts.get(key, 0) + len(word)
        return ",".join(sorted(counts)[:5])

    return body


BENCHMARKS: tuple[Benchmark, ...] = (
    Benchmark("module_call", TORCH, module_call),
    Benchmark("optimizer_step", TORCH, optimizer_step),
    Benchmark("autograd_small_graph", TORCH, autograd_small_graph),
    Benchmark("fx_trace", TORCH, fx_trace),
    Benchmark("dynamo_trace", TORCH, dynamo_trace),
    Benchmark("dataloader_collate", TORCH, dataloader_collate),
    Benchmark("py_float_arithmetic", CALIBRATION, py_float_arithmetic),
    Benchmark("py_method_calls", CALIBRATION, py_method_calls),
    Benchmark("py_generators_closures", CALIBRATION, py_generators_closures),
    Benchmark("py_dict_strings", CALIBRATION, py_dict_strings),
)


def select(names: list[str] | None) -> tuple[Benchmark, ...]:
    """The benchmarks named (in suite order), or all; unknown names raise ValueError naming the known ones."""
    if not names:
        return BENCHMARKS
    known = {benchmark.name for benchmark in BENCHMARKS}
    unknown = [name for name in names if name not in known]
    if unknown:
        raise ValueError(f"unknown benchmark {', '.join(unknown)} (known: {', '.join(sorted(known))})")
    return tuple(benchmark for benchmark in BENCHMARKS if benchmark.name in names)
