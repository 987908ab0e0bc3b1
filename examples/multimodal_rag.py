"""Multimodal RAG: markdown notes and their diagrams, searched by text, by image, and both.

A folder of notes with a diagram, a chart and a photo becomes one index:

1. the notes become text chunks (``hybrid_retrievers.ingest``);
2. each image is described by a vision chat model (``ChatModelDescriber``); the
   descriptions are indexed beside the chunks (``type="image"``), in BM25 and dense;
3. each image also gets a CLIP vector (``ClipEmbedder``, ``VectorIndex.from_images``).

Then three queries go through LangChain's ``MultimodalRetriever``: a question with a
visual word (the diagram leads), the same question without it (the text leads), an image
query (a cropped screenshot of the diagram finds it), and text plus image together.
The fused results show which route found each one, a reranker reorders them, and the
context a RAG chain would receive marks the image results ``[IMAGE]``.

Stand-ins (nothing can be downloaded here; pass the real models in your code):

* the vision model is a small function that looks at the image it is sent and tells
  these three drawings apart by colour (``stand_in_vision_model``): pass ``ChatOpenAI(model="gpt-4o-mini")``, ``ChatAnthropic(...)``,
  ``ChatOllama(model="llava")`` or any vision chat model;
* the CLIP model is a tiny one (16 dimensions) trained for a second on coloured squares
  (the test suite's ``tests/tiny_clip.py``): image->image search works because near
  copies of an image have near vectors, but its text->image matches mean little; pass
  ``ClipEmbedder("clip-ViT-B-32")``;
* the cross-encoder has an untrained head (its order means nothing): pass
  ``"cross-encoder/ms-marco-MiniLM-L-6-v2"``.

Run: python examples/multimodal_rag.py
"""

from __future__ import annotations

import base64
import io
import tempfile
from pathlib import Path

from _stand_in_models import MINILM, clip_path, cross_encoder_path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from langchain_core.runnables import RunnableLambda  # noqa: E402
from PIL import Image  # noqa: E402

from hybrid_retrievers import FusionSearcher, VectorIndex  # noqa: E402
from hybrid_retrievers.images import (  # noqa: E402
    DescriptionCache,
    describe_images,
    find_image_files,
    format_context,
)
from hybrid_retrievers.ingest import (  # noqa: E402
    StructuredChunker,
    document_chunks,
    markdown_structure,
)
from hybrid_retrievers.models import ClipEmbedder, SentenceTransformerEmbedder  # noqa: E402
from langchain_hybrid_retrievers import (  # noqa: E402
    ChatModelDescriber,
    CrossEncoderReranker,
    ImageRetriever,
    MultimodalRetriever,
    RerankingRetriever,
)

NOTES = {
    "architecture.md": """# Architecture

## Services
The API gateway receives every request and routes it to the orders service or the
billing service. The services never call each other directly: they connect through a
message queue, which retries failed messages and keeps them in order.

## Deployment
Each service runs in its own container; the queue is a managed cluster.
""",
    "sales.md": """# Sales report

## Quarterly revenue
Revenue grew every quarter: 4.1 million in Q1, 5.3 in Q2, 6.0 in Q3 and 7.8 in Q4.
The growth came from the billing service's new subscription plans.
""",
    "office.md": """# The office

## Visiting
The office is on the fourth floor, by the harbour; visitors sign in at the desk.
""",
}

DESCRIPTIONS = {
    "diagram": "Architecture diagram: boxes labelled API gateway, orders service and billing "
               "service, with arrows from the gateway to each service and from the services "
               "to a message queue.",
    "chart": "Bar chart of quarterly revenue in millions: Q1 4.1, Q2 5.3, Q3 6.0, Q4 7.8.",
    "photo": "Photo of an office window at sunset, orange sky over the harbour.",
}
"""What a vision chat model says about each of the drawings below."""


def stand_in_vision_model(messages: list) -> str:
    """A stand-in for a vision chat model: it looks at the image block it is sent (the
    v1 standard block: base64 data and MIME type) and tells the drawings apart by their
    colours: green bars, light-blue boxes, an orange sky."""
    block = next(b for b in messages[-1].content if isinstance(b, dict) and b["type"] == "image")
    with Image.open(io.BytesIO(base64.b64decode(block["base64"]))) as image:
        r, g, b = np.asarray(image.convert("RGB").resize((64, 64)), dtype=int).transpose(2, 0, 1)
    green = int(((g > r + 40) & (g > b)).sum())
    orange = int(((r > 200) & (g > 120) & (g < 220) & (b < 140)).sum())
    blue = int(((b > 220) & (r > 190) & (r < 220)).sum())
    kind = max([("chart", green), ("photo", orange), ("diagram", blue)], key=lambda x: x[1])
    return DESCRIPTIONS[kind[0]]


def draw(folder: Path) -> None:
    """The notes' images, drawn here (never fetched)."""
    fig, ax = plt.subplots(figsize=(5, 3))
    ax.axis("off")
    boxes = {"API gateway": (0.1, 0.5), "orders service": (0.45, 0.8),
             "billing service": (0.45, 0.2), "message queue": (0.85, 0.5)}
    for label, (x, y) in boxes.items():
        ax.text(x, y, label, ha="center", va="center", fontsize=9,
                bbox={"boxstyle": "round", "facecolor": "#cde", "edgecolor": "#124"})
    for a, b in [("API gateway", "orders service"), ("API gateway", "billing service"),
                 ("orders service", "message queue"), ("billing service", "message queue")]:
        ax.annotate("", xy=boxes[b], xytext=boxes[a], arrowprops={"arrowstyle": "->"})
    fig.savefig(folder / "architecture.png", dpi=80)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(4, 3))
    ax.bar(["Q1", "Q2", "Q3", "Q4"], [4.1, 5.3, 6.0, 7.8], color="#3a7")
    ax.set_title("Revenue (millions)")
    fig.savefig(folder / "sales_chart.png", dpi=80)
    plt.close(fig)

    sunset = Image.new("RGB", (320, 200))
    sunset.putdata([(255, 140 + y // 4, 60 + y // 3) if y < 120 else (20, 40, 90 + x // 8)
                    for y in range(200) for x in range(320)])
    sunset.save(folder / "office_sunset.jpg", quality=90)


def show(title: str, docs: list) -> None:
    print(f"\n{title}")
    for doc in docs:
        kind = "IMAGE" if doc.metadata.get("type") == "image" else "text "
        routes = ", ".join(f"{s['source']}#{s['rank']}" for s in doc.metadata["fusion"]["sources"])
        text = " ".join(doc.page_content.split())
        print(f"  {kind} {doc.id:<24} found by {routes:<40} {text[:44]}")


folder = Path(tempfile.mkdtemp(prefix="multimodal-rag-"))
for name, text in NOTES.items():
    (folder / name).write_text(text, encoding="utf-8")
draw(folder)

# 1. Text chunks of the notes.
chunker = StructuredChunker(chunk_size=80)
chunks = [
    chunk
    for path in sorted(folder.glob("*.md"))
    for chunk in document_chunks(markdown_structure(path.read_text("utf-8")), path.name,
                                 chunker, file=path.name, file_hash="-",
                                 metadata={"type": "text", "source": path.name})
]

# 2. Image descriptions by a (stand-in) vision chat model, cached by content hash.
images = find_image_files(folder)
describer = ChatModelDescriber(RunnableLambda(stand_in_vision_model), name="vision-model")
cache = DescriptionCache(folder / "descriptions")  # a folder: checksummed JSON inside
described = describe_images(images, describer, cache=cache,
                            metadatas=[{"source": p.name} for p in images])
cache.save()
assert [d.text.split()[0] for d in described] == ["Architecture", "Photo", "Bar"]  # it looked
again = describe_images(images, describer, cache=cache)  # re-indexing never asks twice
assert [d.metadata["description_source"] for d in again] == ["cache"] * len(images)

# BM25 + dense over the chunks and the descriptions, in one hybrid index.
docs = chunks + described
hybrid = FusionSearcher.hybrid(
    [d.text for d in docs], SentenceTransformerEmbedder(MINILM),
    ids=[d.id for d in docs], metadatas=[dict(d.metadata) for d in docs])

# 3. CLIP vectors of the same images: their ids are the descriptions' ids (the content
# hash), so an image found by both routes is one result.
clip = ClipEmbedder(clip_path())
clip_index = VectorIndex.from_images(images, embedder=clip,
                                     metadatas=[{"source": p.name} for p in images])
assert set(clip_index.ids) == {d.id for d in described}

retriever = MultimodalRetriever.from_index(hybrid, images=clip_index, describer=describer,
                                           cache=cache, k=4)

# A question without visual words: text leads. The same with "diagram": the image leads.
plain = retriever.invoke("how do the services connect to each other?")
visual = retriever.invoke("show me the diagram of how the services connect")
show("how do the services connect to each other?", plain)
show("show me the diagram of how the services connect", visual)
print("  visual words:", visual[0].metadata["multimodal"]["visual_words"],
      "weights:", visual[0].metadata["multimodal"]["weights"])
assert plain[0].metadata["type"] == "text" and visual[0].metadata["type"] == "image"
assert visual[0].metadata["image"].endswith("architecture.png")

# An image query: a cropped, shrunk screenshot of the diagram finds the diagram
# (ImageRetriever: the input string is the image's path or data URI).
screenshot = folder / "screenshot.png"
with Image.open(folder / "architecture.png") as original:
    original.crop((10, 10, 390, 230)).resize((190, 110)).save(screenshot)
by_image = ImageRetriever.from_index(hybrid, images=clip_index, describer=describer,
                                     cache=cache, k=3).invoke(str(screenshot))
show(f"image query: {screenshot.name}", by_image)
assert by_image[0].metadata["image"].endswith("architecture.png")

# Text and image together.
mixed = retriever.invoke("quarterly revenue", image=folder / "sales_chart.png")
show("quarterly revenue + sales_chart.png", mixed)
assert mixed[0].metadata["multimodal"]["routes"] == [
    "text", "descriptions", "images", "image", "described_image"]

# Rerank the fused candidates with a cross-encoder (it reads the text: the descriptions
# stand for the images), then build the context a RAG chain would receive.
reranked = RerankingRetriever(
    base_retriever=MultimodalRetriever.from_index(hybrid, images=clip_index, k=8),
    reranker=CrossEncoderReranker(model=cross_encoder_path(), top_n=4), fetch_k=8, k=4,
).invoke("show me the diagram of how the services connect")
print("\nreranked (stand-in cross-encoder):",
      [(d.id, round(d.metadata["relevance_score"], 3)) for d in reranked])
context = format_context(reranked)
print("\ncontext for the RAG prompt:\n" + context)
assert "[IMAGE] (source: " in context and "[TEXT] (source: " in context
