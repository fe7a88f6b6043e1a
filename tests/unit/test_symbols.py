"""Unit tests for codesift_db.ingest.symbols (no server needed).

Every per-language case lists the expected (qualified_name, kind, start_line, end_line) of each
symbol, checked by hand against the source. The *_SMALL cases were written down before the
extractor was first run on them (a blind check of fidelity).
"""

from __future__ import annotations

import time
from typing import NamedTuple

import pytest
from codesift_db.ingest import symbols
from codesift_db.ingest.languages import SYMBOL_KINDS
from codesift_db.ingest.symbols import detect_language, extract_symbols

KEYS = {
    "name",
    "qualified_name",
    "kind",
    "start_line",
    "end_line",
    "signature",
    "body",
    "parent",
    "part",
    "name_line",
    "docstring",
}
KINDS = set(SYMBOL_KINDS)  # what extraction may store: find_symbol's kind enum


class Case(NamedTuple):
    path: str
    source: str
    expected: list


def _code(text: str) -> str:
    """Drop the newline that follows the opening quotes."""
    return text[1:] if text.startswith("\n") else text


def _key(sym: dict) -> tuple:
    return (sym["qualified_name"], sym["kind"], sym["start_line"], sym["end_line"])


def _check_invariants(path: str, source: str, syms: list[dict]) -> None:
    lines = source.split("\n")
    assert [s["start_line"] for s in syms] == sorted(s["start_line"] for s in syms)
    for s in syms:
        assert set(s) == KEYS
        assert s["kind"] in KINDS
        assert 1 <= s["start_line"] <= s["end_line"] <= len(lines)
        assert s["body"] == "\n".join(lines[s["start_line"] - 1 : s["end_line"]])
        assert s["body"].strip()
        assert s["name"] and "\n" not in s["name"]
        assert len(s["signature"]) <= 300
        assert isinstance(s["part"], int) and s["part"] >= 0
        if s["part"] <= 1:
            assert s["start_line"] <= s["name_line"] <= s["end_line"]


PYTHON_SAMPLE = Case(
    "views.py",
    _code(
        r'''
"""HTTP views for the blob store."""
from __future__ import annotations

import functools
from dataclasses import dataclass

from fastapi import APIRouter, FastAPI

app = FastAPI()
router = APIRouter(prefix="/blobs")


def cached(fn):
    """Memoise a zero-argument function."""

    @functools.wraps(fn)
    def wrapper():
        if not hasattr(wrapper, "value"):
            wrapper.value = fn()
        return wrapper.value

    return wrapper


@dataclass(frozen=True)
class Blob:
    sha: str
    size: int

    @property
    def short(self) -> str:
        return self.sha[:7]

    def describe(self, verbose: bool = False) -> str:
        # Long form includes the size.
        if verbose:
            return f"{self.short} ({self.size} bytes)"
        return self.short

    class Meta:
        table = "blobs"


class BlobStore:
    def __init__(self, root):
        self.root = root

    async def get(self, sha: str) -> Blob | None:
        def key(s):
            return s.lower()

        return self._index.get(key(sha))


@app.get("/health")
def health():
    return {"ok": True}


@router.post("/{sha}")
async def upload(sha: str, body: bytes) -> dict:
    store = BlobStore("/tmp")
    return {"sha": sha, "stored": await store.get(sha) is not None}
'''
    ),
    [
        ("cached", "function", 13, 22),
        ("cached.wrapper", "function", 16, 20),
        ("Blob", "class", 25, 41),
        ("Blob.short", "method", 30, 32),
        ("Blob.describe", "method", 34, 38),
        ("Blob.Meta", "class", 40, 41),
        ("BlobStore", "class", 44, 52),
        ("BlobStore.__init__", "method", 45, 46),
        ("BlobStore.get", "method", 48, 52),
        ("BlobStore.get.key", "function", 49, 50),
        ("health", "route", 55, 57),
        ("upload", "route", 60, 63),
    ],
)

JAVASCRIPT_SAMPLE = Case(
    "app.js",
    _code(
        r"""
'use strict';
const express = require('express');
const { Pool } = require('pg');

const app = express();
const router = express.Router();

/**
 * Wraps a pg pool with a couple of helpers.
 */
class Repository extends Base {
  constructor(pool) {
    super();
    this.pool = pool;
  }

  async findById(id) {
    const { rows } = await this.pool.query('SELECT * FROM items WHERE id = $1', [id]);
    return rows[0];
  }

  static create(config) {
    return new Repository(new Pool(config));
  }

  onError = (err) => {
    console.error(err);
  };
}

function buildQuery(filters) {
  function clause(key) {
    return `${key} = ?`;
  }
  return Object.keys(filters).map(clause).join(' AND ');
}

const slugify = (text) =>
  text
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-');

const handlers = {
  ping() {
    return 'pong';
  },
  health: async () => ({ ok: true }),
};

app.get('/items/:id', async (req, res) => {
  const repo = Repository.create({});
  res.json(await repo.findById(req.params.id));
});

router.post('/items', function (req, res) {
  res.status(201).end();
});

module.exports.formatItem = function (item) {
  return `${item.id}: ${item.name}`;
};

exports.parseId = (raw) => parseInt(raw, 10);

module.exports = { app, router, buildQuery, slugify, handlers };
"""
    ),
    [
        ("Repository", "class", 11, 29),
        ("Repository.constructor", "method", 12, 15),
        ("Repository.findById", "method", 17, 20),
        ("Repository.create", "method", 22, 24),
        ("Repository.onError", "method", 26, 28),
        ("buildQuery", "function", 31, 36),
        ("buildQuery.clause", "function", 32, 34),
        ("slugify", "function", 38, 41),
        ("handlers.ping", "function", 44, 46),
        ("handlers.health", "function", 47, 47),
        ("GET /items/:id", "route", 50, 53),
        ("POST /items", "route", 55, 57),
        ("formatItem", "function", 59, 61),
        ("parseId", "function", 63, 63),
    ],
)

TYPESCRIPT_SAMPLE = Case(
    "service.ts",
    _code(
        r"""
import { Injectable } from '@angular/core';
import type { Request } from 'express';

export interface User {
  id: number;
  name: string;
  email?: string;
}

export type UserId = User['id'];

export enum Role {
  Admin = 'admin',
  Member = 'member',
}

// Caches users in memory.
@Injectable()
export class UserService<T extends User = User> {
  private cache = new Map<UserId, T>();

  constructor(private readonly http: HttpClient) {}

  @Memoize()
  async getUser(id: UserId): Promise<T | undefined> {
    if (this.cache.has(id)) {
      return this.cache.get(id);
    }
    const user = await this.http.get<T>(`/users/${id}`);
    this.cache.set(id, user);
    return user;
  }

  private evict = (id: UserId): void => {
    this.cache.delete(id);
  };
}

export abstract class Shape {
  abstract area(): number;

  describe(): string {
    return `${this.constructor.name} with area ${this.area()}`;
  }
}

export function isAdmin(user: User, roles: Role[]): boolean {
  const check = (r: Role) => r === Role.Admin;
  return roles.some(check);
}

export const toUser = (req: Request): User => ({
  id: Number(req.params.id),
  name: String(req.query.name),
});

namespace Validation {
  export function isEmail(value: string): boolean {
    return /@/.test(value);
  }
}
"""
    ),
    [
        ("User", "interface", 4, 8),
        ("UserId", "type", 10, 10),
        ("Role", "type", 12, 15),
        ("UserService", "class", 18, 37),
        ("UserService.constructor", "method", 22, 22),
        ("UserService.getUser", "method", 24, 32),
        ("UserService.evict", "method", 34, 36),
        ("Shape", "class", 39, 45),
        ("Shape.describe", "method", 42, 44),
        ("isAdmin", "function", 47, 50),
        ("isAdmin.check", "function", 48, 48),
        ("toUser", "function", 52, 55),
        ("Validation.isEmail", "function", 58, 60),
    ],
)

TSX_SAMPLE = Case(
    "Panel.tsx",
    _code(
        r"""
import React, { useState } from 'react';

interface PanelProps {
  title: string;
  onClose?: () => void;
}

type Tone = 'info' | 'warning';

export function Panel({ title, onClose }: PanelProps) {
  const [open, setOpen] = useState(true);

  function close() {
    setOpen(false);
    onClose?.();
  }

  if (!open) return null;
  return (
    <section className="panel">
      <h2>{title}</h2>
      <button onClick={close}>x</button>
    </section>
  );
}

export const Badge = ({ tone }: { tone: Tone }) => <span className={tone}>{tone}</span>;

export default class Counter extends React.Component<{}, { n: number }> {
  state = { n: 0 };

  increment = () => {
    this.setState(({ n }) => ({ n: n + 1 }));
  };

  render() {
    return <button onClick={this.increment}>{this.state.n}</button>;
  }
}
"""
    ),
    [
        ("PanelProps", "interface", 3, 6),
        ("Tone", "type", 8, 8),
        ("Panel", "function", 10, 25),
        ("Panel.close", "function", 13, 16),
        ("Badge", "function", 27, 27),
        ("Counter", "class", 29, 39),
        ("Counter.increment", "method", 32, 34),
        ("Counter.render", "method", 36, 38),
    ],
)

GO_SAMPLE = Case(
    "store.go",
    _code(
        r"""
// Package store keeps blobs in memory.
package store

import (
	"errors"
	"sync"
)

// ErrNotFound is returned when a key is missing.
var ErrNotFound = errors.New("not found")

// Getter reads values.
type Getter interface {
	Get(key string) ([]byte, error)
}

// Store is a concurrency-safe map.
type Store[K comparable] struct {
	mu    sync.RWMutex
	items map[K][]byte
}

type (
	Key   string
	Stats struct {
		Hits, Misses int
	}
)

// New returns an empty store.
func New[K comparable]() *Store[K] {
	return &Store[K]{items: make(map[K][]byte)}
}

// Get returns the value stored under key.
func (s *Store[K]) Get(key K) ([]byte, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	v, ok := s.items[key]
	if !ok {
		return nil, ErrNotFound
	}
	return v, nil
}

func (s Stats) Ratio() float64 {
	total := func() int { return s.Hits + s.Misses }
	if total() == 0 {
		return 0
	}
	return float64(s.Hits) / float64(total())
}
"""
    ),
    [
        ("Getter", "interface", 13, 15),
        ("Store", "type", 18, 21),
        ("Key", "type", 24, 24),
        ("Stats", "type", 25, 27),
        ("New", "function", 31, 33),
        ("Store.Get", "method", 36, 44),
        ("Stats.Ratio", "method", 46, 52),
    ],
)

JAVA_SAMPLE = Case(
    "Controller.java",
    _code(
        r"""
package com.example.api;

import java.util.List;
import org.springframework.web.bind.annotation.*;

/** REST endpoints for orders. */
@RestController
@RequestMapping("/orders")
public class OrderController {
    private final OrderService service;

    public OrderController(OrderService service) {
        this.service = service;
    }

    @GetMapping("/{id}")
    public Order get(@PathVariable long id) {
        return service.find(id)
            .orElseThrow(() -> new NotFound(id));
    }

    @Override
    public String toString() {
        return "OrderController";
    }

    private static class NotFound extends RuntimeException {
        NotFound(long id) {
            super("order " + id);
        }
    }
}

interface OrderService {
    java.util.Optional<Order> find(long id);

    default List<Order> all() {
        return List.of();
    }
}

record Order(long id, String sku) {
    Order {
        if (sku == null) throw new IllegalArgumentException();
    }
}

enum Status {
    OPEN,
    CLOSED;

    boolean isFinal() {
        return this == CLOSED;
    }
}
"""
    ),
    [
        ("OrderController", "class", 7, 32),
        ("OrderController.OrderController", "method", 12, 14),
        ("OrderController.get", "route", 16, 20),
        ("OrderController.toString", "method", 22, 25),
        ("OrderController.NotFound", "class", 27, 31),
        ("OrderController.NotFound.NotFound", "method", 28, 30),
        ("OrderService", "interface", 34, 40),
        ("OrderService.all", "method", 37, 39),
        ("Order", "type", 42, 46),
        ("Order.Order", "method", 43, 45),
        ("Status", "type", 48, 55),
        ("Status.isFinal", "method", 52, 54),
    ],
)

RUST_SAMPLE = Case(
    "lib.rs",
    _code(
        r"""
//! A tiny LRU cache.
use std::collections::HashMap;
use std::hash::Hash;

/// Errors the cache can report.
#[derive(Debug, Clone, PartialEq)]
pub enum CacheError {
    Full,
    Missing(String),
}

/// Something that can be weighed.
pub trait Weigh {
    fn weight(&self) -> usize;

    fn is_heavy(&self) -> bool {
        self.weight() > 1024
    }
}

#[derive(Default)]
pub struct Lru<K, V> {
    map: HashMap<K, V>,
    order: Vec<K>,
    capacity: usize,
}

pub type Shared<K, V> = std::sync::Arc<Lru<K, V>>;

impl<K: Hash + Eq + Clone, V> Lru<K, V> {
    pub fn new(capacity: usize) -> Self {
        Self { map: HashMap::new(), order: Vec::new(), capacity }
    }

    #[inline]
    pub fn get(&mut self, key: &K) -> Option<&V> {
        fn touch<K: PartialEq + Clone>(order: &mut Vec<K>, key: &K) {
            order.retain(|k| k != key);
            order.push(key.clone());
        }
        touch(&mut self.order, key);
        self.map.get(key)
    }
}

impl Weigh for String {
    fn weight(&self) -> usize {
        self.len()
    }
}

pub fn describe(err: &CacheError) -> String {
    match err {
        CacheError::Full => "full".to_string(),
        CacheError::Missing(k) => format!("missing {k}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_is_empty() {
        let lru: Lru<u8, u8> = Lru::new(2);
        assert!(lru.map.is_empty());
    }
}
"""
    ),
    [
        ("CacheError", "type", 6, 10),
        ("Weigh", "type", 13, 19),
        ("Weigh.is_heavy", "method", 16, 18),
        ("Lru", "type", 21, 26),
        ("Shared", "type", 28, 28),
        ("Lru.new", "method", 31, 33),
        ("Lru.get", "method", 35, 43),
        ("Lru.get.touch", "function", 37, 40),
        ("String.weight", "method", 47, 49),
        ("describe", "function", 52, 57),
        ("tests.new_is_empty", "function", 63, 67),
    ],
)

C_SAMPLE = Case(
    "list.c",
    _code(
        r"""
#include <stdlib.h>
#include <string.h>

/* A singly linked list of strings. */
typedef struct node {
    char *value;
    struct node *next;
} node_t;

typedef struct {
    node_t *head;
    size_t len;
} list_t;

enum color { RED, GREEN };

static node_t *node_new(const char *value)
{
    node_t *n = malloc(sizeof *n);
    if (!n)
        return NULL;
    n->value = strdup(value);
    n->next = NULL;
    return n;
}

int list_push(list_t *list, const char *value) {
    node_t *n = node_new(value);
    if (n == NULL) {
        return -1;
    }
    n->next = list->head;
    list->head = n;
    list->len++;
    return 0;
}

void list_free(list_t *list);

void list_free(list_t *list) {
    node_t *n = list->head;
    while (n) {
        node_t *next = n->next;
        free(n->value);
        free(n);
        n = next;
    }
}
"""
    ),
    [
        ("node_t", "type", 5, 8),
        ("list_t", "type", 10, 13),
        ("color", "type", 15, 15),
        ("node_new", "function", 17, 25),
        ("list_push", "function", 27, 36),
        ("list_free", "function", 40, 48),
    ],
)

CPP_SAMPLE = Case(
    "shapes.cpp",
    _code(
        r"""
#include <memory>
#include <string>
#include <vector>

namespace geo {

struct Point {
    double x = 0;
    double y = 0;
};

// Abstract base for all shapes.
class Shape {
public:
    virtual ~Shape() = default;
    virtual double area() const = 0;
    std::string name() const { return name_; }

protected:
    std::string name_;
};

class Circle : public Shape {
public:
    explicit Circle(double r);
    double area() const override;

private:
    double r_;
};

template <typename T>
T clamp(T v, T lo, T hi) {
    return v < lo ? lo : (v > hi ? hi : v);
}

namespace detail {
double square(double v) { return v * v; }
}  // namespace detail

}  // namespace geo

geo::Circle::Circle(double r) : r_(r) {
    name_ = "circle";
}

double geo::Circle::area() const {
    return 3.14159 * detail::square(r_);
}

int main() {
    std::vector<std::unique_ptr<geo::Shape>> shapes;
    shapes.push_back(std::make_unique<geo::Circle>(2.0));
    double total = 0;
    for (const auto &s : shapes) {
        total += s->area();
    }
    return total > 0 ? 0 : 1;
}
"""
    ),
    [
        ("geo.Point", "type", 7, 10),
        ("geo.Shape", "class", 13, 21),
        ("geo.Shape.name", "method", 17, 17),
        ("geo.Circle", "class", 23, 30),
        ("geo.clamp", "function", 32, 35),
        ("geo.detail.square", "function", 38, 38),
        ("geo.Circle.Circle", "method", 43, 45),
        ("geo.Circle.area", "method", 47, 49),
        ("main", "function", 51, 59),
    ],
)

RUBY_SAMPLE = Case(
    "billing.rb",
    _code(
        r"""
# frozen_string_literal: true

require "json"

module Billing
  # Raised when an invoice cannot be charged.
  class ChargeError < StandardError; end

  class Invoice
    attr_reader :lines

    def initialize(lines = [])
      @lines = lines
    end

    def total
      lines.sum { |line| line[:amount] * line[:qty] }
    end

    def self.from_json(raw)
      data = JSON.parse(raw, symbolize_names: true)
      new(data.fetch(:lines))
    end

    class << self
      def empty
        new([])
      end
    end

    private

    def validate!
      raise ChargeError, "no lines" if lines.empty?
    end
  end

  def self.charge(invoice, gateway)
    invoice.send(:validate!)
    gateway.charge(invoice.total)
  end
end

def format_money(cents)
  format("%.2f", cents / 100.0)
end
"""
    ),
    [
        ("Billing", "class", 5, 42),
        ("Billing.ChargeError", "class", 7, 7),
        ("Billing.Invoice", "class", 9, 36),
        ("Billing.Invoice.initialize", "method", 12, 14),
        ("Billing.Invoice.total", "method", 16, 18),
        ("Billing.Invoice.from_json", "method", 20, 23),
        ("Billing.Invoice.empty", "method", 26, 28),
        ("Billing.Invoice.validate!", "method", 33, 35),
        ("Billing.charge", "method", 38, 41),
        ("format_money", "function", 44, 46),
    ],
)

PHP_SAMPLE = Case(
    "UserController.php",
    _code(
        r"""
<?php

namespace App\Http\Controllers;

use App\Models\User;
use Illuminate\Http\Request;

interface Repository
{
    public function find(int $id): ?User;
}

trait LogsActivity
{
    protected function log(string $message): void
    {
        logger()->info($message);
    }
}

#[Attribute]
final class UserController extends Controller implements Repository
{
    use LogsActivity;

    public function __construct(private Request $request)
    {
    }

    /**
     * Finds a user or fails.
     */
    public function find(int $id): ?User
    {
        $this->log("find {$id}");
        return User::findOrFail($id);
    }

    public static function routes(): array
    {
        return ['users.show' => 'find'];
    }
}

enum Status: string
{
    case Active = 'active';
    case Banned = 'banned';
}

function user_label(User $user): string
{
    $suffix = fn ($u) => $u->admin ? ' (admin)' : '';
    return $user->name . $suffix($user);
}
"""
    ),
    [
        ("Repository", "interface", 8, 11),
        ("LogsActivity", "type", 13, 19),
        ("LogsActivity.log", "method", 15, 18),
        ("UserController", "class", 21, 43),
        ("UserController.__construct", "method", 26, 28),
        ("UserController.find", "method", 33, 37),
        ("UserController.routes", "method", 39, 42),
        ("Status", "type", 45, 49),
        ("user_label", "function", 51, 55),
    ],
)

CSHARP_SAMPLE = Case(
    "Orders.cs",
    _code(
        r"""
using System;
using System.Collections.Generic;
using Microsoft.AspNetCore.Mvc;

namespace Shop.Api
{
    public interface IOrderStore
    {
        Order? Find(Guid id);
    }

    public record Order(Guid Id, decimal Total);

    public struct Money
    {
        public decimal Amount;
        public override string ToString() => $"{Amount:0.00}";
    }

    public enum State { Open, Paid }

    [ApiController]
    [Route("api/[controller]")]
    public class OrdersController : ControllerBase
    {
        private readonly IOrderStore _store;

        public OrdersController(IOrderStore store)
        {
            _store = store;
        }

        [HttpGet("{id}")]
        public ActionResult<Order> Get(Guid id)
        {
            var order = _store.Find(id);
            return order is null ? NotFound() : Ok(order);
        }

        /// <summary>Sum of all totals.</summary>
        public static decimal Sum(IEnumerable<Order> orders)
        {
            decimal Add(decimal acc, Order o) => acc + o.Total;
            decimal total = 0;
            foreach (var o in orders) total = Add(total, o);
            return total;
        }
    }
}
"""
    ),
    [
        ("IOrderStore", "interface", 7, 10),
        ("Order", "type", 12, 12),
        ("Money", "type", 14, 18),
        ("Money.ToString", "method", 17, 17),
        ("State", "type", 20, 20),
        ("OrdersController", "class", 22, 48),
        ("OrdersController.OrdersController", "method", 28, 31),
        ("OrdersController.Get", "route", 33, 38),
        ("OrdersController.Sum", "method", 41, 47),
        ("OrdersController.Sum.Add", "function", 43, 43),
    ],
)

PYTHON_SMALL = Case(
    "a.py",
    _code(
        r'''
import os


class Config(dict):
    """Settings."""

    DEFAULTS = {"debug": False}

    @classmethod
    def load(cls, path):
        with open(path) as fh:
            return cls(parse(fh.read()))

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name)


@bp.route("/login", methods=["POST"])
def login():
    return "ok"


async def main():
    async def tick():
        pass
    await tick()
'''
    ),
    [
        ("Config", "class", 4, 18),
        ("Config.load", "method", 9, 12),
        ("Config.__getattr__", "method", 14, 18),
        ("login", "route", 21, 23),
        ("main", "function", 26, 29),
        ("main.tick", "function", 27, 28),
    ],
)

JAVASCRIPT_SMALL = Case(
    "b.js",
    _code(
        r"""
import fs from 'fs';

export default class Cache {
  #store = new Map();

  get(key) {
    return this.#store.get(key);
  }

  set(key, value) {
    this.#store.set(key, value);
    return this;
  }
}

export async function load(path) {
  const raw = await fs.promises.readFile(path, 'utf8');
  return JSON.parse(raw);
}

var legacy = function (a, b) {
  return a + b;
};

router.delete('/cache/:key', (req, res) => {
  res.sendStatus(204);
});

Cache.prototype.clear = function () {
  this.#store.clear();
};
"""
    ),
    [
        ("Cache", "class", 3, 14),
        ("Cache.get", "method", 6, 8),
        ("Cache.set", "method", 10, 13),
        ("load", "function", 16, 19),
        ("legacy", "function", 21, 23),
        ("DELETE /cache/:key", "route", 25, 27),
        ("Cache.clear", "method", 29, 31),
    ],
)

TYPESCRIPT_SMALL = Case(
    "c.ts",
    _code(
        r"""
export interface Repo<T> {
  get(id: string): Promise<T>;
}

export type Handler = (req: Request) => Promise<Response>;

export class MemoryRepo<T> implements Repo<T> {
  private items: Record<string, T> = {};

  async get(id: string): Promise<T> {
    return this.items[id];
  }

  put = (id: string, item: T): void => {
    this.items[id] = item;
  };
}

export const enum Level {
  Low,
  High,
}

function helper<T>(xs: T[]): T | undefined {
  return xs[0];
}
"""
    ),
    [
        ("Repo", "interface", 1, 3),
        ("Handler", "type", 5, 5),
        ("MemoryRepo", "class", 7, 17),
        ("MemoryRepo.get", "method", 10, 12),
        ("MemoryRepo.put", "method", 14, 16),
        ("Level", "type", 19, 22),
        ("helper", "function", 24, 26),
    ],
)

GO_SMALL = Case(
    "d.go",
    _code(
        r"""
package api

import "net/http"

type Server struct {
	mux *http.ServeMux
}

type Handler interface {
	ServeHTTP(w http.ResponseWriter, r *http.Request)
}

func NewServer() *Server {
	s := &Server{mux: http.NewServeMux()}
	s.routes()
	return s
}

func (s *Server) routes() {
	s.mux.HandleFunc("/health", s.health)
}

func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	w.WriteHeader(http.StatusOK)
}
"""
    ),
    [
        ("Server", "type", 5, 7),
        ("Handler", "interface", 9, 11),
        ("NewServer", "function", 13, 17),
        ("Server.routes", "method", 19, 21),
        ("Server.health", "method", 23, 25),
    ],
)

JAVA_SMALL = Case(
    "E.java",
    _code(
        r"""
package x;

public abstract class Animal implements Comparable<Animal> {
    protected final String name;

    protected Animal(String name) {
        this.name = name;
    }

    public abstract String sound();

    @Override
    public int compareTo(Animal other) {
        return name.compareTo(other.name);
    }

    public static class Dog extends Animal {
        public Dog() { super("dog"); }

        @Override
        public String sound() {
            return "woof";
        }
    }
}
"""
    ),
    [
        ("Animal", "class", 3, 25),
        ("Animal.Animal", "method", 6, 8),
        ("Animal.compareTo", "method", 12, 15),
        ("Animal.Dog", "class", 17, 24),
        ("Animal.Dog.Dog", "method", 18, 18),
        ("Animal.Dog.sound", "method", 20, 23),
    ],
)

RUST_SMALL = Case(
    "f.rs",
    _code(
        r"""
use std::fmt;

pub struct Matrix {
    rows: usize,
    data: Vec<f64>,
}

impl fmt::Display for Matrix {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{}x{}", self.rows, self.data.len() / self.rows)
    }
}

impl Matrix {
    /// Identity matrix.
    pub fn identity(n: usize) -> Self {
        let mut data = vec![0.0; n * n];
        for i in 0..n {
            data[i * n + i] = 1.0;
        }
        Matrix { rows: n, data }
    }
}

pub enum Op { Add, Mul }
"""
    ),
    [
        ("Matrix", "type", 3, 6),
        ("Matrix.fmt", "method", 9, 11),
        ("Matrix.identity", "method", 16, 22),
        ("Op", "type", 25, 25),
    ],
)

CPP_SMALL = Case(
    "g.hpp",
    _code(
        r"""
#pragma once
#include <string>

namespace net {

class Socket {
public:
    Socket(int fd) : fd_(fd) {}
    ~Socket() { close(); }
    void close();

private:
    int fd_;
};

inline std::string host() {
    return "localhost";
}

}  // namespace net

void net::Socket::close() {
    fd_ = -1;
}
"""
    ),
    [
        ("net.Socket", "class", 6, 14),
        ("net.Socket.Socket", "method", 8, 8),
        ("net.Socket.~Socket", "method", 9, 9),
        ("net.host", "function", 16, 18),
        ("net.Socket.close", "method", 22, 24),
    ],
)

RUBY_SMALL = Case(
    "h.rb",
    _code(
        r"""
class Stack
  include Enumerable

  def initialize
    @items = []
  end

  def push(item)
    @items.push(item)
    self
  end

  def each(&block)
    @items.each(&block)
  end
end

module Util
  def self.blank?(s)
    s.nil? || s.strip.empty?
  end
end
"""
    ),
    [
        ("Stack", "class", 1, 16),
        ("Stack.initialize", "method", 4, 6),
        ("Stack.push", "method", 8, 11),
        ("Stack.each", "method", 13, 15),
        ("Util", "class", 18, 22),
        ("Util.blank?", "method", 19, 21),
    ],
)

PHP_SMALL = Case(
    "i.php",
    _code(
        r"""
<?php
declare(strict_types=1);

abstract class Shape
{
    abstract public function area(): float;

    public function describe(): string
    {
        return static::class . ' ' . $this->area();
    }
}

final class Square extends Shape
{
    public function __construct(private float $side) {}

    public function area(): float
    {
        return $this->side ** 2;
    }
}

function total(Shape ...$shapes): float
{
    return array_sum(array_map(fn ($s) => $s->area(), $shapes));
}
"""
    ),
    [
        ("Shape", "class", 4, 12),
        ("Shape.describe", "method", 8, 11),
        ("Square", "class", 14, 22),
        ("Square.__construct", "method", 16, 16),
        ("Square.area", "method", 18, 21),
        ("total", "function", 24, 27),
    ],
)

CSHARP_SMALL = Case(
    "j.cs",
    _code(
        r"""
namespace Demo;

public sealed class Greeter
{
    private readonly string _name;

    public Greeter(string name) => _name = name;

    public string Greet(string other)
    {
        string Format(string a, string b) => $"{a} greets {b}";
        return Format(_name, other);
    }
}

public interface IClock
{
    DateTime Now { get; }
}
"""
    ),
    [
        ("Greeter", "class", 3, 14),
        ("Greeter.Greeter", "method", 7, 7),
        ("Greeter.Greet", "method", 9, 13),
        ("Greeter.Greet.Format", "function", 11, 11),
        ("IClock", "interface", 16, 19),
    ],
)

C_SMALL = Case(
    "k.c",
    _code(
        r"""
#include <stdio.h>

struct buffer {
    char *data;
    size_t len;
};

static int
buffer_append(struct buffer *b, const char *s)
{
    (void)b;
    return printf("%s", s);
}

int main(void)
{
    struct buffer b = {0};
    return buffer_append(&b, "hi");
}
"""
    ),
    [
        ("buffer", "type", 3, 6),
        ("buffer_append", "function", 8, 13),
        ("main", "function", 15, 19),
    ],
)

CASES = [
    PYTHON_SAMPLE,
    JAVASCRIPT_SAMPLE,
    TYPESCRIPT_SAMPLE,
    TSX_SAMPLE,
    GO_SAMPLE,
    JAVA_SAMPLE,
    RUST_SAMPLE,
    C_SAMPLE,
    CPP_SAMPLE,
    RUBY_SAMPLE,
    PHP_SAMPLE,
    CSHARP_SAMPLE,
    PYTHON_SMALL,
    JAVASCRIPT_SMALL,
    TYPESCRIPT_SMALL,
    GO_SMALL,
    JAVA_SMALL,
    RUST_SMALL,
    CPP_SMALL,
    RUBY_SMALL,
    PHP_SMALL,
    CSHARP_SMALL,
    C_SMALL,
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.path)
def test_language_samples(case: Case) -> None:
    syms = extract_symbols(case.path, case.source)
    _check_invariants(case.path, case.source, syms)
    assert [_key(s) for s in syms] == case.expected
    assert all(s["part"] == 0 for s in syms)
    for s in syms:
        assert s["qualified_name"].endswith(s["name"])


def test_fidelity_over_all_samples(capsys) -> None:
    """Every expected symbol is extracted with its exact short name, kind and line range.

    test_language_samples pins qualified names and checks `name` only as their suffix; this
    pins `name` itself (what find_symbol matches): a route's whole label ('GET /users'),
    otherwise the last segment of the qualified name."""
    total = 0
    misses = []
    for case in CASES:
        got = {
            (s["name"], s["kind"], s["start_line"], s["end_line"])
            for s in extract_symbols(case.path, case.source)
        }
        for qualified, kind, start, end in case.expected:
            total += 1
            route = kind == "route" and " " in qualified
            name = qualified if route else qualified.rsplit(".", 1)[-1]
            if (name, kind, start, end) not in got:
                misses.append((case.path, name, kind, start, end))
    with capsys.disabled():
        print(f"\nsymbol fidelity: {total - len(misses)}/{total}")
    assert total >= 150
    assert misses == []


def test_parent_and_signature_details() -> None:
    py = {s["qualified_name"]: s for s in extract_symbols("views.py", PYTHON_SAMPLE.source)}
    assert py["Blob.short"]["parent"] == "Blob"
    assert py["Blob.short"]["signature"] == "@property def short(self) -> str:"
    assert py["cached.wrapper"]["parent"] == "cached"
    assert py["cached"]["parent"] is None
    assert py["upload"]["signature"].startswith('@router.post("/{sha}") async def upload(')
    go = {s["qualified_name"]: s for s in extract_symbols("store.go", GO_SAMPLE.source)}
    assert go["Store.Get"]["name"] == "Get"
    assert go["Store.Get"]["parent"] == "Store"
    assert go["Store.Get"]["signature"] == "func (s *Store[K]) Get(key K) ([]byte, error)"
    cpp = {s["qualified_name"]: s for s in extract_symbols("shapes.cpp", CPP_SAMPLE.source)}
    assert cpp["geo.Circle.area"]["parent"] == "geo.Circle"
    assert cpp["geo.clamp"]["signature"] == "template <typename T> T clamp(T v, T lo, T hi)"
    js = {s["qualified_name"]: s for s in extract_symbols("app.js", JAVASCRIPT_SAMPLE.source)}
    assert js["GET /items/:id"]["name"] == "GET /items/:id"
    assert js["GET /items/:id"]["signature"] == "app.get('/items/:id', async (req, res) =>"
    assert js["handlers.ping"]["parent"] == "handlers"
    rb = {s["qualified_name"]: s for s in extract_symbols("billing.rb", RUBY_SAMPLE.source)}
    assert rb["Billing"]["signature"] == "module Billing"


def test_detect_language() -> None:
    expected = {
        "a/b.py": "python",
        "x.mjs": "javascript",
        "x.jsx": "javascript",
        "x.ts": "typescript",
        "x.tsx": "tsx",
        "main.go": "go",
        "A.java": "java",
        "lib.rs": "rust",
        "x.c": "c",
        "x.h": "c",
        "x.hpp": "cpp",
        "x.cc": "cpp",
        "x.rb": "ruby",
        "Rakefile": "ruby",
        "x.php": "php",
        "X.cs": "csharp",
        "README.md": "markdown",
        "NOTES.MARKDOWN": "markdown",
        "docs/index.rst": "rst",
        "CHANGES.REST": "rst",
        "Main.kt": None,
        "Makefile": None,
        "data.json": None,
        "": None,
    }
    assert {p: detect_language(p) for p in expected} == expected


def test_javascript_assignment_forms() -> None:
    src = _code(
        """
app.locals.title = function () {
  return 'shop';
};

exports.total = (items) => items.length;

Cart.prototype.add = function (item) {
  this.items.push(item);
};

module.exports = {
  empty() {
    return [];
  },
};
"""
    )
    assert [_key(s) for s in extract_symbols("x.js", src)] == [
        ("app.locals.title", "function", 1, 3),
        ("total", "function", 5, 5),
        ("Cart.add", "method", 7, 9),
        ("empty", "function", 12, 14),
    ]


def test_crlf_line_endings() -> None:
    syms = extract_symbols("crlf.py", "class A:\r\n    def f(self):\r\n        return 1\r\n")
    assert [_key(s) for s in syms] == [("A", "class", 1, 3), ("A.f", "method", 2, 3)]
    assert syms[1]["signature"] == "def f(self):"


def test_cpp_header_detected_from_content() -> None:
    src = "namespace io {\nclass File {\npublic:\n    int fd() const { return fd_; }\n};\n}\n"
    assert [_key(s) for s in extract_symbols("file.h", src)] == [
        ("io.File", "class", 2, 5),
        ("io.File.fd", "method", 4, 4),
    ]


def test_explicit_language_overrides_extension() -> None:
    src = "def f():\n    return 1\n"
    assert [_key(s) for s in extract_symbols("script", src, "python")] == [("f", "function", 1, 2)]
    assert [_key(s) for s in extract_symbols("script", src, "py")] == [("f", "function", 1, 2)]


# --------------------------------------------------------------------------- name lines


NAME_LINES = {
    # path -> (source, {qualified name: (start_line, name_line)})
    "views.py": (
        _code(
            """
# Cache the result.
@functools.lru_cache()
@app.route(
    "/x",
)
def cached(fn):
    return fn


class Store:
    @property
    def size(self):
        return 1
"""
        ),
        {"cached": (2, 6), "Store": (10, 10), "Store.size": (11, 12)},
    ),
    "app.ts": (
        _code(
            """
@Component({
  selector: 'app',
})
export class AppComponent {
  @HostListener('click')
  onClick(): void {
    this.name = 'x';
  }
}

export const handler = async (
  req,
) => {
  return req;
};
"""
        ),
        {"AppComponent": (1, 4), "AppComponent.onClick": (5, 6), "handler": (11, 11)},
    ),
    "A.java": (
        _code(
            """
@Service
public class A {
    @GetMapping("/x")
    @Deprecated
    public String get() {
        return "x";
    }
}
"""
        ),
        {"A": (1, 2), "A.get": (3, 5)},
    ),
    "lib.rs": (
        "#[inline]\n#[must_use]\npub fn add(a: i32) -> i32 {\n    a\n}\n",
        {"add": (1, 3)},
    ),
    "x.cpp": (
        "template <typename T>\nT\nmax_of(T a, T b) {\n    return a > b ? a : b;\n}\n",
        {"max_of": (1, 3)},
    ),
    "x.c": (
        "static int\nmain_loop (void)\n{\n  return 0;\n}\n\ntypedef struct {\n  int x;\n}"
        " point_t;\n",
        {"main_loop": (1, 2), "point_t": (7, 7)},
    ),
    "Main.kt": (
        '@Suppress("unused")\nfun main(args: Array<String>) {\n    println("x")\n}\n',
        {"main": (1, 2)},
    ),
}


@pytest.mark.parametrize("path", list(NAME_LINES))
def test_name_line_is_the_line_of_the_name_below_decorators(path: str) -> None:
    source, expected = NAME_LINES[path]
    syms = extract_symbols(path, source)
    _check_invariants(path, source, syms)
    got = {s["qualified_name"]: (s["start_line"], s["name_line"]) for s in syms}
    assert got == expected


def test_every_part_of_a_split_symbol_has_the_name_line() -> None:
    src = "@decorated\n" + _big_class(60)
    parts = [s for s in extract_symbols("big.py", src) if s["qualified_name"] == "Big"]
    assert len(parts) > 1 and {p["name_line"] for p in parts} == {2}


# --------------------------------------------------------------------------- syntax errors


def test_python_syntax_error_keeps_good_definitions() -> None:
    src = _code(
        """
def good_one(a):
    return a + 1


def broken(:
    x = = 2
    return )


class Fine:
    def method(self):
        return 42


def good_two():
    return [1, 2
"""
    )
    keys = [_key(s) for s in extract_symbols("x.py", src)]
    assert ("good_one", "function", 1, 2) in keys
    assert ("good_two", "function", 15, 16) in keys
    assert any(k[0].endswith("method") and k[2:] == (11, 12) for k in keys)
    assert not any(k[0] == "broken" for k in keys)  # its header swallowed `class Fine`


def test_javascript_and_go_syntax_errors_keep_good_definitions() -> None:
    js = _code(
        """
function ok() {
  return 1;
}

function bad( {
  let x = ;
}

class K {
  m() { return 2; }
}

const f = () => {
  return ok();
};
"""
    )
    keys = [_key(s) for s in extract_symbols("x.js", js)]
    for expected in [
        ("ok", "function", 1, 3),
        ("K", "class", 9, 11),
        ("K.m", "method", 10, 10),
        ("f", "function", 13, 15),
    ]:
        assert expected in keys
    go = "package main\n\nfunc A() int {\n\treturn 1\n}\n\nfunc B( {\n}\n\nfunc (t T) M() {}\n"
    keys = [_key(s) for s in extract_symbols("x.go", go)]
    assert ("A", "function", 3, 5) in keys
    assert ("T.M", "method", 10, 10) in keys


# --------------------------------------------------------------------------- markdown

README = _code(
    """
# codesift

A code-context engine.

## Install

```bash
# this is a shell comment, not a heading
pip install codesift
```

### From source

    make install

## Usage ##

Run it.

~~~python
## not a heading either
~~~

# Appendix
Last words.
"""
)


def test_markdown_sections() -> None:
    syms = extract_symbols("docs/README.md", README)
    _check_invariants("README.md", README, syms)
    assert [(s["name"], s["qualified_name"], s["start_line"], s["end_line"]) for s in syms] == [
        ("codesift", "codesift", 1, 23),
        ("Install", "codesift > Install", 5, 15),
        ("From source", "codesift > Install > From source", 12, 15),
        ("Usage", "codesift > Usage", 16, 23),
        ("Appendix", "Appendix", 24, 25),
    ]
    assert {s["kind"] for s in syms} == {"section"}
    by_name = {s["name"]: s for s in syms}
    assert by_name["From source"]["parent"] == "codesift > Install"
    assert by_name["codesift"]["parent"] is None
    assert by_name["Usage"]["signature"] == "## Usage ##"


def test_markdown_without_headings_uses_windows() -> None:
    text = "\n".join(f"Plain paragraph line {i}." for i in range(130)) + "\n"
    syms = extract_symbols("notes.md", text)
    assert [(s["kind"], s["start_line"], s["end_line"]) for s in syms] == [
        ("block", 1, 60),
        ("block", 61, 120),
        ("block", 121, 130),
    ]


# --------------------------------------------------------------------------- fallback

KOTLIN = _code(
    """
package demo

import kotlin.math.max

// A tiny Kotlin file: no grammar for it, so braces decide.
data class Point(val x: Int, val y: Int)

class Grid(private val w: Int, private val h: Int) {
    private val cells = IntArray(w * h)

    fun get(p: Point): Int {
        return cells[p.y * w + p.x]
    }

    fun set(p: Point, v: Int) {
        cells[p.y * w + p.x] = max(v, 0) // { not a real brace }
    }
}

@Suppress("unused")
fun main(args: Array<String>) {
    val g = Grid(3, 3)
    g.set(Point(1, 1), 5)
    println("value: ${g.get(Point(1, 1))} }")
}
"""
)

NIM = _code(
    """
import strutils

proc greet(name: string): string =
  result = "Hello, " & name
  if name.len == 0:
    result = "Hello, nobody"

type
  Animal = object
    name: string
    legs: int

echo greet("nim")
"""
)


def test_fallback_brace_blocks() -> None:
    syms = extract_symbols("src/Main.kt", KOTLIN)
    _check_invariants("Main.kt", KOTLIN, syms)
    assert [(s["name"], s["kind"], s["start_line"], s["end_line"]) for s in syms] == [
        ("Grid", "block", 8, 18),
        ("main", "block", 20, 25),
    ]
    assert syms[0]["parent"] is None and syms[0]["part"] == 0


def test_fallback_indentation_blocks() -> None:
    syms = extract_symbols("build.nim", NIM)
    _check_invariants("build.nim", NIM, syms)
    assert [(s["name"], s["kind"], s["start_line"], s["end_line"]) for s in syms] == [
        ("greet", "block", 3, 6),
        ("type", "block", 8, 11),
    ]


def test_fallback_windows_for_prose() -> None:
    text = "\n".join(f"Line {i} of a licence text." for i in range(150))
    syms = extract_symbols("LICENSE", text)
    assert [(s["start_line"], s["end_line"]) for s in syms] == [(1, 60), (61, 120), (121, 150)]
    assert all(s["kind"] == "block" and s["name"] == "Line" for s in syms)


def test_missing_grammar_falls_back(monkeypatch) -> None:
    monkeypatch.setitem(symbols._PARSERS, "python", None)
    src = "def f():\n    return 1\n\n\ndef g():\n    return 2\n"
    syms = extract_symbols("x.py", src)
    assert [(s["name"], s["kind"], s["start_line"], s["end_line"]) for s in syms] == [
        ("f", "block", 1, 2),
        ("g", "block", 5, 6),
    ]


def test_parsed_file_without_definitions_falls_back() -> None:
    src = "import os\n\nfor name in os.listdir('.'):\n    print(name)\n"
    syms = extract_symbols("script.py", src)
    assert [(s["kind"], s["start_line"], s["end_line"]) for s in syms] == [("block", 3, 4)]


# --------------------------------------------------------------------------- splitting


def _big_class(methods: int) -> str:
    head = 'class Big:\n    """A very large class."""\n\n'
    body = "".join(
        f"    # method {i}\n    def m{i}(self, x):\n        y = x * {i}\n        return y\n\n"
        for i in range(methods)
    )
    return head + body


def _assert_tiles(parts: list[dict], start: int, end: int) -> None:
    assert [p["part"] for p in parts] == list(range(1, len(parts) + 1))
    assert parts[0]["start_line"] == start and parts[-1]["end_line"] == end
    for a, b in zip(parts, parts[1:], strict=False):
        assert b["start_line"] == a["end_line"] + 1


def test_large_class_is_split_between_methods() -> None:
    src = _big_class(400)  # 2,003 lines
    lines = src.split("\n")
    syms = extract_symbols("big.py", src)
    _check_invariants("big.py", src, syms)
    parts = [s for s in syms if s["qualified_name"] == "Big"]
    assert len(parts) > 1 and all(p["part"] > 0 for p in parts)  # no whole copy (part 0)
    _assert_tiles(parts, 1, 2002)
    for p in parts:
        assert p["end_line"] - p["start_line"] + 1 <= symbols.MAX_SYMBOL_LINES
        assert len(p["body"]) <= symbols.MAX_SYMBOL_CHARS
        assert p["kind"] == "class" and p["name"] == "Big" and p["signature"] == "class Big:"
    for p in parts[1:]:  # cuts fall before a method's leading comment
        assert lines[p["start_line"] - 1].startswith("    # method ")
    methods = [s for s in syms if s["kind"] == "method"]
    assert len(methods) == 400 and all(m["part"] == 0 for m in methods)
    assert methods[0]["start_line"] == 5 and methods[0]["end_line"] == 7


def test_long_function_split_at_statements_and_by_chars() -> None:
    body = "".join(
        f"    v{i} = compute({i})\n    if v{i}:\n        log(v{i})\n" for i in range(200)
    )
    src = "def long():\n" + body + "    return 1\n"
    parts = [s for s in extract_symbols("l.py", src) if s["name"] == "long"]
    _assert_tiles(parts, 1, 602)
    assert all(not p["body"].split("\n")[0].startswith("        ") for p in parts[1:])
    wide = "def wide():\n" + "".join(f"    x{i} = '{'y' * 90}'\n" for i in range(100))
    parts = [s for s in extract_symbols("w.py", wide) if s["name"] == "wide"]
    assert len(parts) >= 2  # 101 lines but ~10 KB: split by size
    _assert_tiles(parts, 1, 101)
    assert all(len(p["body"]) <= symbols.MAX_SYMBOL_CHARS for p in parts)


def test_single_overlong_line_stays_whole() -> None:
    long_line = "    return '" + "x" * 8000 + "'"
    syms = extract_symbols("f.py", "def f():\n" + long_line + "\n")
    assert [(s["start_line"], s["end_line"], s["part"]) for s in syms] == [(1, 1, 1), (2, 2, 2)]
    assert syms[1]["body"] == long_line
    syms = extract_symbols("g.py", "def g(): return '" + "x" * 8000 + "'\n")
    assert [(s["start_line"], s["end_line"], s["part"]) for s in syms] == [(1, 1, 0)]


def test_large_markdown_section_is_split() -> None:
    paragraphs = "".join(f"Paragraph {i} line one.\nline two.\n\n" for i in range(100))
    src = "# Big\n\n" + paragraphs + "## Small\n\ntext\n"
    syms = extract_symbols("big.md", src)
    parts = [s for s in syms if s["name"] == "Big"]
    _assert_tiles(parts, 1, 305)
    for p in parts[1:]:
        assert p["body"].startswith(("Paragraph", "## Small"))


# --------------------------------------------------------------------------- robustness


@pytest.mark.parametrize(
    "path, text",
    [
        ("empty.py", ""),
        ("blank.py", "\n\n   \n"),
        ("nul.py", "def f():\n    return '\x00'\n\x00\x00class A:\n    pass\n"),
        ("nul.js", "\x00" * 100),
        ("crlf.py", "def f():\r\n    return 1\r\n"),
        ("surrogate.py", "def f():\n    return '\udcff'\n"),
        ("one-line.js", "function a(){return 1};var b=function(){return [1,2,3]};" * 35000),
        ("one-line.py", "x = [" + "1, " * 700000 + "]\n"),
        ("one-line.txt", "a" * 2_000_000),
        ("one-line.md", "# " + "a" * 2_000_000),
        ("deep.js", "function f() {\n" * 5000 + "}\n" * 5000),
        ("deep-one-line.js", "function f(){" * 5000 + "}" * 5000),
        ("deep.py", "x = " + "[" * 5000 + "]" * 5000 + "\n"),
        ("deep-if.py", "".join(" " * i + "if x:\n" for i in range(5000)) + " " * 5000 + "pass\n"),
        ("deep.c", "int f() {\n" + "{\n" * 5000 + "}\n" * 5000 + "}\n"),
        ("deep.rs", "fn f() {" + "{" * 5000 + "}" * 5000 + "}\n"),
        ("deep.txt", "{\n" * 5000 + "}\n" * 5000),
        ("deep.md", "".join("#" * (1 + i % 6) + f" h{i}\n" for i in range(5000))),
        ("setext.md", "T\n---\n" * 100_000),
        ("titles.rst", "".join(f"T{i}\n{'=-~^'[i % 4] * 3}\n" for i in range(100_000))),
        ("adornments.rst", "=" * 2_000_000 + "x\n" + ("-" * 40 + "\n") * 50_000),
        ("unclosed.cpp", "namespace a { class B { void f() { if (x) { " * 500),
    ],
    ids=lambda v: v if isinstance(v, str) and len(v) < 30 else None,
)
def test_never_raises_and_stays_fast(path: str, text: str) -> None:
    started = time.monotonic()
    syms = extract_symbols(path, text)
    assert time.monotonic() - started < 30
    assert isinstance(syms, list)
    for s in syms:
        assert set(s) == KEYS and s["body"].strip()


def test_garbage_arguments_do_not_raise() -> None:
    assert extract_symbols(None, None) == []  # type: ignore[arg-type]
    assert extract_symbols("x.py", b"def f():\n    pass\n")[0]["name"] == "f"  # type: ignore
    assert extract_symbols("x.weird", "def f():\n    pass\n", "klingon")[0]["kind"] == "block"


def test_nested_symbols_are_capped() -> None:
    src = "function f() {\n" * 200 + "}\n" * 200
    syms = extract_symbols("deep.js", src)
    assert len({s["qualified_name"] for s in syms}) == symbols.MAX_NESTING
