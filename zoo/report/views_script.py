"""The inlined script behind the answer views (zoo.report.views): it reads the rows embedded as JSON and redraws
each view's answer when the reader changes an input; nothing is fetched, no server is needed.

Numbers are written as people read them: thousands separators (en-US), no exponent, ranges as "9,813–15,280".
"""

SCRIPT = r"""
(function(){
const D=JSON.parse(document.getElementById('view-data').textContent);
function fmt(v){if(v===null||v===undefined||isNaN(v))return '-';const a=Math.abs(v);
 const d=a>=100?0:a>=10?1:a>=1?2:3;return v.toLocaleString('en-US',{minimumFractionDigits:d,maximumFractionDigits:d})}
function esc(t){return String(t).replace(/[&<>"]/g,c=>({'&':'&amp;','<':'&lt;','>':'&gt;','"':'&quot;'}[c]))}
// an input by its name, compared as text: a name made of a row's text (price-<device>) is never a CSS selector
function field(box,name){return [...box.querySelectorAll('input,select')].find(e=>e.name===name)}
function num(box,name){const e=field(box,name);const v=e?parseFloat(e.value):NaN;return isNaN(v)||v<0?null:v}
function pick(box,name){const e=field(box,name);return e?e.value:null}
// text: how many leading columns hold text (left-aligned); the rest are numbers
function table(head,rows,text){return '<table class="answer-table"><thead><tr>'+head.map(h=>'<th>'+esc(h)+'</th>').join('')+
 '</tr></thead><tbody>'+rows.map(r=>'<tr>'+r.map((c,i)=>'<td'+(i<(text||1)?' class="t"':'')+'>'+c+'</td>').join('')+
 '</tr>').join('')+'</tbody></table>'}
function gpu(box){
 const model=pick(box,'model'),target=num(box,'target'),mine=D.gpu.filter(r=>r.model===model);
 const devices=[...new Set(mine.map(r=>r.device))],batches=[...new Set(mine.map(r=>r.batch))].sort((a,b)=>a-b);
 const rows=devices.map(d=>{const all=mine.filter(r=>r.device===d);
  const ok=all.filter(r=>r.fits&&(target===null||r.ms<=target)).sort((a,b)=>b.ips-a.ips);
  return {d,best:ok[0]||null,fastest:all.slice().sort((a,b)=>a.ms-b.ms)[0],price:num(box,'price-'+d)}});
 rows.forEach(r=>{r.per=r.best&&r.price?r.best.ips*3600/r.price:null});
 rows.sort((a,b)=>(b.per??-1)-(a.per??-1)||(b.best?b.best.ips:-1)-(a.best?a.best.ips:-1));
 const body=rows.map(r=>{const b=r.best;
  if(!b)return [esc(r.d),'none','-','-','-','-','over target: '+fmt(r.fastest.ms)+' ms at batch '+esc(r.fastest.batch)];
  const per=r.per===null?(r.price===null?'type a price':'-'):fmt(r.per)+' ('+fmt(b.p10*3600/r.price)+'–'+
   fmt(b.p90*3600/r.price)+')';
  return [esc(r.d),esc(b.batch),fmt(b.ips),fmt(b.p10)+'–'+fmt(b.p90),fmt(b.ms),fmt(b.gib),per]});
 return table(['device','best batch','img/s (predicted)','p10–p90 img/s (predicted)','ms / batch (predicted)',
  'serving GiB / batch','images per $ (p10–p90)'],body)+'<p class="note">Predicted for '+esc(model)+' at '+
  esc(mine.length?mine[0].size:'?')+' px, '+esc([...new Set(mine.map(r=>r.dtype))].join(' / '))+
  ' autocast, batches predicted: '+esc(batches.join(', '))+'. Not measured on any GPU here.</p>'}
function cpu(box){
 const machine=pick(box,'machine'),batch=parseInt(pick(box,'batch')),target=num(box,'target');
 const mine=D.cpu.filter(r=>r.machine===machine&&r.batch===batch);
 const backends=[...new Set(mine.map(r=>r.backend))].sort((a,b)=>(a!=='eager')-(b!=='eager')||a.localeCompare(b));
 if(!backends.length)return '<p class="note">No inference timed at batch '+esc(batch)+' on this machine.</p>';
 return '<div class="side">'+backends.map(k=>{const all=mine.filter(r=>r.backend===k);
  const ok=all.filter(r=>target===null||r.ms<=target).sort((a,b)=>(b.top1??-1)-(a.top1??-1)||a.ms-b.ms);
  const body=ok.slice(0,8).map(r=>[esc(r.model),esc(r.size),fmt(r.ms),fmt(r.ips),r.top1===null?'-':fmt(r.top1),
   esc(r.pretraining||'-'),r.noisy?'<span class="loaded">loaded'+(r.others>0.15?': others used '+
   Math.round(100*r.others)+'% of the CPU':' (cv '+fmt(r.cv)+')')+'</span>':'no']);
  return '<div><h3>'+esc(k==='onnxruntime'?'ONNX Runtime':k)+'</h3>'+(body.length?table(['model','res (px)',
   'p50 ms / batch','img/s','top-1 %','pretraining','loaded?'],body):'<p class="note">none under the target</p>')+
   '<p class="note">'+ok.length+' of '+all.length+' timed rows under the target'+(ok.length>8?' (best 8 shown)':'')+
   '.</p></div>'}).join('')+'</div>'}
function task(box){
 const t=pick(box,'task'),gmacs=num(box,'gmacs'),train=num(box,'train'),all=D.task.filter(r=>r.task===t);
 const ok=all.filter(r=>(gmacs===null||r.gmacs<=gmacs)&&(train===null||(r.train_mib!==null&&r.train_mib<=train)));
 const det=t==='detection';
 const body=ok.slice(0,8).map(r=>[esc(r.model),esc(r.head),esc(r.size),fmt(r.score),r.mask===null?'-':fmt(r.mask),
  fmt(r.gmacs),r.train_mib===null?'-':fmt(r.train_mib),'<span class="recipe">'+esc(r.recipe||'-')+'</span>']);
 const batches=[...new Set(all.map(r=>r.batch+' ('+r.dtype+')'))].join(', ');
 return (body.length?table(['backbone','heads','res (px, H x W)',det?'box AP':'mIoU %',
  det?'mask AP':'mIoU % (ms+flip)','GMACs / image','training MiB / batch','recipe (published)'],body,3):
  '<p class="note">none within these budgets</p>')+'<p class="note">'+ok.length+' of '+all.length+
  ' counted '+esc(t)+' models within the budgets'+(ok.length>8?' (best 8 shown)':'')+'; training memory at batch '+
  esc(batches)+'; scores as published, costs counted here.</p>'}
const views={'view-gpu':gpu,'view-cpu':cpu,'view-task':task};
Object.entries(views).forEach(([id,draw])=>{const box=document.getElementById(id);if(!box)return;
 const redraw=()=>{box.querySelector('.answer').innerHTML=draw(box)};
 box.addEventListener('input',redraw);box.addEventListener('change',redraw);redraw()});
})();
"""
